// The offline moderation provider: deterministic word rules per category, so provider guardrails
// work in the dev stack and in tests with no key. Not a classifier: it only knows these phrases.
// A category scores 0.9 when one of its phrases appears as whole words (case-insensitive), else 0;
// a top-level category also scores its subcategories' highest. Flagged at 0.5 or more.
import { MODERATION_CATEGORIES } from '../../abl/moderation';
import type { ModerationProvider, ModerationResult } from './types';

export const LOCAL_MODERATION_MODEL = 'local-rules';
export const LOCAL_MATCH_SCORE = 0.9;
const FLAG_AT = 0.5;

/** The phrases of each category, documented in docs/abl.md ("Provider guardrails"). */
export const LOCAL_MODERATION_RULES: Readonly<Partial<Record<(typeof MODERATION_CATEGORIES)[number], readonly string[]>>> = {
  harassment: ['idiot', 'moron', 'stupid', 'loser', 'shut up', 'worthless', 'pathetic'],
  'harassment/threatening': ["i'll hurt you", 'i will hurt you', "i'll find you", 'i will find you', 'you will regret'],
  hate: ['subhuman', 'inferior race', 'go back to your country', 'hate all'],
  'hate/threatening': ['exterminate them', 'wipe them out'],
  illicit: ['buy drugs', 'sell drugs', 'launder money', 'fake passport', 'stolen credit card', 'hack into'],
  'illicit/violent': ['buy a gun illegally', 'make a bomb', 'build a bomb'],
  'self-harm': ['self-harm', 'self harm', 'hurt myself', 'cut myself', 'suicide'],
  'self-harm/intent': ['kill myself', 'end my life', 'want to die'],
  'self-harm/instructions': ['how to kill myself', 'ways to end my life'],
  sexual: ['porn', 'nude', 'nudes', 'explicit sex', 'sexting'],
  violence: ['kill', 'murder', 'shoot', 'stab', 'bomb', 'attack', 'beat up', 'strangle'],
  'violence/graphic': ['gore', 'blood everywhere', 'dismember'],
};

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PATTERNS = Object.entries(LOCAL_MODERATION_RULES).map(
  ([category, phrases]) => [category, new RegExp(`(?<![\\w'])(?:${phrases.map(escape).join('|')})(?![\\w'])`, 'i')] as const,
);

/** The offline verdict for one text. */
export function localModeration(text: string): ModerationResult {
  const scores: Record<string, number> = Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, 0]));
  for (const [category, re] of PATTERNS) if (re.test(text)) scores[category] = LOCAL_MATCH_SCORE;
  for (const c of MODERATION_CATEGORIES) {
    if (c.includes('/')) continue;
    for (const [id, score] of Object.entries(scores)) if (id.startsWith(`${c}/`) && score > (scores[c] ?? 0)) scores[c] = score;
  }
  const flaggedCategories = MODERATION_CATEGORIES.filter((c) => (scores[c] ?? 0) >= FLAG_AT);
  return { flagged: flaggedCategories.length > 0, scores, flaggedCategories, model: LOCAL_MODERATION_MODEL };
}

export class LocalModerationProvider implements ModerationProvider {
  readonly name = 'local';
  moderate(texts: string[]): Promise<ModerationResult[]> {
    return Promise.resolve(texts.map(localModeration));
  }
}

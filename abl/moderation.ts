// Moderation categories and the decision of a provider guardrail (`provider`, `category`,
// `threshold`): shared by the compiler (which names are valid) and the interpreter (does a
// provider's answer make the guardrail fire). The categories are OpenAI's moderation ids.

/** OpenAI's moderation category ids; a top-level name also covers its `name/…` subcategories. */
export const MODERATION_CATEGORIES = [
  'harassment', 'harassment/threatening',
  'hate', 'hate/threatening',
  'illicit', 'illicit/violent',
  'self-harm', 'self-harm/intent', 'self-harm/instructions',
  'sexual', 'sexual/minors',
  'violence', 'violence/graphic',
] as const;
export type ModerationCategory = (typeof MODERATION_CATEGORIES)[number];

/** Provider names a guardrail may give, and the provider each one is. */
export const MODERATION_PROVIDER_NAMES: Readonly<Record<string, 'openai' | 'local'>> = {
  openai: 'openai',
  openai_moderation: 'openai',
  'openai-moderation': 'openai',
  local: 'local',
};

/**
 * A category as written (`self_harm`, `Hate`, `violence.graphic`, `harassment_threatening`) as the
 * provider's id, or null when it names none.
 */
export function normalizeCategory(raw: string): ModerationCategory | null {
  let s = raw.trim().toLowerCase().replace(/\s+/g, '_');
  s = s.replace(/^self[_-]harm/, 'self-harm');
  const sub = /^(harassment|hate|illicit|self-harm|sexual|violence)[_./](\w+)$/.exec(s);
  if (sub) s = `${sub[1]}/${sub[2]}`;
  return (MODERATION_CATEGORIES as readonly string[]).includes(s) ? (s as ModerationCategory) : null;
}

/** What a moderation provider answered for one text. */
export interface ModerationVerdict {
  /** The provider's own overall verdict. */
  flagged: boolean;
  /** Score per category id, 0..1. */
  scores: Record<string, number>;
  /** Categories the provider itself flagged. */
  flaggedCategories: string[];
}

export interface ModerationRule {
  /** Empty: every category. */
  categories: readonly string[];
  /** Null: the provider's own flag decides. */
  threshold: number | null;
}

/** Whether a category id is `category` or one of its subcategories. */
function covers(category: string, id: string): boolean {
  return id === category || id.startsWith(`${category}/`);
}

/**
 * Does the verdict make the guardrail fire? The score is the highest among the guardrail's
 * categories (a top-level category counts its subcategories); with a threshold it fires at or
 * above it, without one when the provider flagged one of those categories.
 */
export function moderationDecision(rule: ModerationRule, verdict: ModerationVerdict): { fires: boolean; category: string | null; score: number } {
  const relevant = (id: string): boolean => rule.categories.length === 0 || rule.categories.some((c) => covers(c, id));
  let category: string | null = null;
  let score = 0;
  for (const [id, value] of Object.entries(verdict.scores)) {
    if (!relevant(id) || typeof value !== 'number' || !(value > score)) continue;
    score = value;
    category = id;
  }
  if (rule.threshold !== null) return { fires: score >= rule.threshold && category !== null, category, score };
  const flagged = verdict.flaggedCategories.find(relevant) ?? null;
  const fires = rule.categories.length === 0 ? verdict.flagged || flagged !== null : flagged !== null;
  return { fires, category: flagged ?? category, score: flagged ? (verdict.scores[flagged] ?? score) : score };
}

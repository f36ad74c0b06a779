// The models of a scenario run besides the agents': the judge of LLM-judged expectations (a
// rubric → pass/fail with a reason) and the persona that writes a simulated user's next message.
// With the offline `local` model both are deterministic rules (docs/abl-tests.md), so scenario
// files run in CI with no key.
import type { ChatMessage, LlmProvider } from '../../providers/llm';
import { keywords } from '../../providers/llm/keywords';
import type { ChatTurn } from '../../abl/runtime';
import type { Judge } from './expect';
import type { Persona } from './schema';

type ResolveModel = (model: string | null) => Promise<{ llm: LlmProvider; provider: string; model: string }>;
interface ModelOptions {
  resolveModel: ResolveModel;
  judgeModel?: string | null;
}

const JUDGE_SYSTEM = [
  'You are an evaluation judge for a conversational agent. You are given a rubric and the agent\'s response.',
  'Decide whether the response satisfies the rubric. Cite the evidence from the response before deciding.',
  'Answer with JSON only: {"reason": "<evidence and reasoning, one or two sentences>", "pass": true|false}.',
].join('\n');

/** Phrases quoted in a rubric ("…" or '…'): the offline judge requires each in the response. */
function quotedPhrases(rubric: string): string[] {
  return [...rubric.matchAll(/"([^"]+)"|'([^']+)'/g)].map((m) => (m[1] ?? m[2] ?? '').trim()).filter((p) => p !== '');
}

/**
 * The offline judge's rule: every phrase the rubric quotes appears in the response (ignoring
 * case); a rubric that quotes nothing passes when the response shares one of its keywords.
 */
export function offlineVerdict(rubric: string, response: string): { pass: boolean; reason: string } {
  const text = response.toLowerCase();
  const phrases = quotedPhrases(rubric);
  if (phrases.length > 0) {
    const missing = phrases.filter((p) => !text.includes(p.toLowerCase()));
    return missing.length === 0
      ? { pass: true, reason: `offline judge: the response has ${phrases.map((p) => `"${p}"`).join(', ')}` }
      : { pass: false, reason: `offline judge: the response lacks ${missing.map((p) => `"${p}"`).join(', ')}` };
  }
  const said = new Set(keywords(response));
  const shared = keywords(rubric).filter((k) => said.has(k));
  return shared.length > 0
    ? { pass: true, reason: `offline judge: the response shares the rubric's words ${shared.join(', ')}` }
    : { pass: false, reason: 'offline judge: the response shares no word with the rubric' };
}

/** The verdict in a judge model's answer: JSON with a boolean `pass`, possibly inside a code fence. */
export function parseVerdict(answer: string): { pass: boolean; reason: string } | null {
  const json = /\{[\s\S]*\}/.exec(answer)?.[0];
  if (!json) return null;
  try {
    const value = JSON.parse(json) as { pass?: unknown; reason?: unknown };
    if (typeof value.pass !== 'boolean') return null;
    return { pass: value.pass, reason: typeof value.reason === 'string' ? value.reason : '' };
  } catch {
    return null;
  }
}

export function createJudge(options: ModelOptions): Judge {
  return async ({ rubric, response, model }) => {
    const target = await options.resolveModel(model ?? options.judgeModel ?? null);
    if (target.provider === 'local') return offlineVerdict(rubric, response);
    const messages: ChatMessage[] = [
      { role: 'system', content: JUDGE_SYSTEM },
      { role: 'user', content: `Rubric:\n${rubric}\n\nResponse:\n${response}` },
    ];
    const result = await target.llm.complete({ model: target.model, messages, temperature: 0, maxTokens: 400 });
    return parseVerdict(result.content) ?? { pass: false, reason: `the judge's answer was not a verdict: ${result.content.slice(0, 200)}` };
  };
}

function personaPrompt(persona: Persona): string {
  const lines = [`You play a user talking to a customer-service agent. You are ${persona.name}.`];
  if (persona.description) lines.push(persona.description);
  if (persona.style) lines.push(`Communication style: ${persona.style}.`);
  if (persona.domainKnowledge) lines.push(`Domain knowledge: ${persona.domainKnowledge}.`);
  if (persona.traits?.length) lines.push(`Traits: ${persona.traits.join('; ')}.`);
  if (persona.goals?.length) lines.push(`Your goals, in order: ${persona.goals.join('; ')}.`);
  if (persona.constraints?.length) lines.push(`Constraints: ${persona.constraints.join('; ')}.`);
  lines.push('Write only your next message to the agent, nothing else. When your goals are met or the conversation cannot go further, answer exactly DONE.');
  return lines.join('\n');
}

/**
 * The persona's next message after `turn` messages, or null when it is done. Offline, the persona
 * says its goals in order, one per turn, and is done when they run out.
 */
export async function nextPersonaMessage(options: ModelOptions, persona: Persona, transcript: readonly ChatTurn[], turn: number): Promise<string | null> {
  const target = await options.resolveModel(persona.model ?? options.judgeModel ?? null);
  if (target.provider === 'local') return persona.goals?.[turn - 1] ?? null;
  // The persona model sees the conversation from the user's side: the agent's replies are its input.
  const messages: ChatMessage[] = [
    { role: 'system', content: personaPrompt(persona) },
    ...transcript.map((t): ChatMessage => ({ role: t.role === 'user' ? 'assistant' : 'user', content: t.content || '(no reply)' })),
  ];
  const result = await target.llm.complete({ model: target.model, messages, temperature: 0.7, maxTokens: 300 });
  const text = result.content.trim();
  return text === '' || /^DONE\.?$/i.test(text) ? null : text.slice(0, 4_000);
}

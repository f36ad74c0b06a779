// Assist mode: an agent advising a human contact-centre agent instead of talking to the customer.
// Builds the model request from what the agent declares (goal, tools, NLU intents, flow steps,
// handoffs, escalation, expertise) and the forwarded conversation, and reads the model's JSON
// answer into bounded suggestions or a disposition summary. Pure: the activity calls the model.
import type { ChatTurn } from './runtime/contract';
import type { AgentIR } from './ir';

/** The first line of an assist request's system prompt; the offline model recognises it. */
export const ASSIST_REQUEST_MARKER = 'SWITCHBOARD ASSIST MODE v1';
const CATALOGUE_PREFIX = 'AGENT_CATALOGUE_JSON: ';
const INPUT_PREFIX = 'CONVERSATION_JSON: ';

export type AssistMode = 'suggest' | 'summary';
export type AssistActionKind = 'tool' | 'intent' | 'step' | 'handoff' | 'escalate' | 'hint';
export type AssistDisposition = 'resolved' | 'unresolved' | 'follow_up' | 'escalated' | 'abandoned' | 'other';
export const ASSIST_DISPOSITIONS: readonly AssistDisposition[] = ['resolved', 'unresolved', 'follow_up', 'escalated', 'abandoned', 'other'];

/** What the agent declares that a human agent could use, as the model is shown it. */
export interface AssistCatalogue {
  agent: string;
  goal: string;
  persona: string | null;
  tools: { name: string; description: string | null; params: { name: string; required: boolean }[] }[];
  intents: { name: string; description: string | null; patterns: string[]; examples: string[] }[];
  /** Flow steps with what they ask or say (their GATHER prompts, RESPOND). */
  steps: { name: string; prompts: string[] }[];
  handoffs: string[];
  /** Reasons of the agent's ESCALATE triggers; null when it has none. */
  escalation: { reasons: string[] } | null;
  /** IDENTITY expertise and limitations: knowledge hints. */
  knowledge: string[];
}

export interface AssistInput {
  transcript: { author: 'USER' | 'AGENT'; text: string }[];
  /** Agent identities that held the conversation, in order. */
  agents: string[];
  /** Transfers so far, e.g. `WARM entry agent-2`. */
  transfers: string[];
  language?: string;
}

export interface AssistAction {
  kind: AssistActionKind;
  name: string | null;
  label: string;
  reason: string;
  confidence: number;
}

export interface AssistSuggestionAnswer {
  replies: string[];
  nextBestActions: AssistAction[];
}

export interface AssistSummaryAnswer {
  summary: string;
  disposition: AssistDisposition;
  keyFacts: string[];
}

export const ASSIST_LIMITS = { replies: 3, replyChars: 500, actions: 5, labelChars: 120, reasonChars: 300, summaryChars: 2000, keyFacts: 10, factChars: 300 } as const;

const cut = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
};

/** The assist catalogue of a compiled agent. */
export function assistCatalogue(agent: AgentIR): AssistCatalogue {
  const steps = agent.flow
    ? agent.flow.order
        .map((name) => agent.flow!.steps[name])
        .filter((s) => s !== undefined)
        .map((s) => ({
          name: s.name,
          prompts: [...(s.gather?.fields ?? []).map((f) => f.prompt).filter((p): p is string => typeof p === 'string' && p !== ''), ...(s.respond ? [s.respond] : [])].map((p) => cut(p, 200)).slice(0, 3),
        }))
    : [];
  return {
    agent: agent.metadata.name,
    goal: agent.identity.goal,
    persona: agent.identity.persona,
    tools: agent.tools.map((t) => ({ name: t.name, description: t.description, params: t.params.map((p) => ({ name: p.name, required: p.required })) })),
    intents: (agent.nlu?.intents ?? []).map((i) => ({ name: i.name, description: i.description, patterns: i.patterns, examples: i.examples.slice(0, 5) })),
    steps,
    handoffs: [...new Set(agent.coordination.handoffs.map((h) => h.to))],
    escalation: agent.coordination.escalation ? { reasons: agent.coordination.escalation.triggers.map((t) => t.reason).filter((r): r is string => !!r).map((r) => cut(r, 200)) } : null,
    knowledge: [...agent.identity.expertise, ...agent.identity.limitations.map((l) => `Limitation: ${l}`)].map((k) => cut(k, 200)).slice(0, 20),
  };
}

const INSTRUCTIONS: Record<AssistMode, string> = {
  suggest:
    'A human agent is talking with a customer. Read the conversation and help the human agent answer the customer\'s latest message. ' +
    `Answer with one JSON object and nothing else: {"replies": [up to ${ASSIST_LIMITS.replies} short replies the human agent could send next, in the conversation's language], ` +
    '"nextBestActions": [{"kind": "tool"|"intent"|"step"|"handoff"|"escalate"|"hint", "name": a tool, intent, step or agent name from the catalogue (null for a hint), ' +
    '"label": what to do, "reason": why, "confidence": 0 to 1}]}. Prefer actions the catalogue declares; a hint is advice or knowledge that fits no declared item.',
  summary:
    'The conversation between a customer and human agents has ended. Write its disposition summary. ' +
    'Answer with one JSON object and nothing else: {"summary": a few sentences on what the customer wanted and what was done, ' +
    `"disposition": one of ${ASSIST_DISPOSITIONS.map((d) => `"${d}"`).join(', ')}, "keyFacts": [short facts a follow-up needs: ids, amounts, dates, promises]}.`,
};

/** The chat messages of an assist request: the instructions and the agent's catalogue, then the conversation. */
export function buildAssistMessages(mode: AssistMode, catalogue: AssistCatalogue, input: AssistInput): ChatTurn[] {
  const system = [
    ASSIST_REQUEST_MARKER,
    `MODE: ${mode}`,
    `You are ${catalogue.agent}, working in assist mode: you advise a human agent, you do not talk to the customer.`,
    `GOAL: ${catalogue.goal}`,
    ...(catalogue.persona ? [`PERSONA: ${catalogue.persona}`] : []),
    INSTRUCTIONS[mode],
    'What you can do (tools, intents, flow steps, handoffs, escalation) and know:',
    CATALOGUE_PREFIX + JSON.stringify(catalogue),
  ].join('\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: `The conversation so far, oldest first (author USER is the customer, AGENT the human agent):\n${INPUT_PREFIX}${JSON.stringify(input)}` },
  ];
}

/** An assist request read back from its messages (for the offline model), or null when it is not one. */
export function readAssistRequest(system: string, user: string): { mode: AssistMode; catalogue: AssistCatalogue; input: AssistInput } | null {
  if (!system.startsWith(ASSIST_REQUEST_MARKER)) return null;
  const mode = /^MODE: (suggest|summary)$/m.exec(system)?.[1] as AssistMode | undefined;
  const catalogueLine = system.split('\n').find((l) => l.startsWith(CATALOGUE_PREFIX));
  const inputLine = user.split('\n').find((l) => l.startsWith(INPUT_PREFIX));
  if (!mode || !catalogueLine || !inputLine) return null;
  try {
    return { mode, catalogue: JSON.parse(catalogueLine.slice(CATALOGUE_PREFIX.length)) as AssistCatalogue, input: JSON.parse(inputLine.slice(INPUT_PREFIX.length)) as AssistInput };
  } catch {
    return null;
  }
}

/** The first JSON object in a model's answer (code fences and prose around it allowed). */
function jsonObjectIn(content: string): Record<string, unknown> | null {
  const start = content.indexOf('{');
  const end = content.lastIndexOf('}');
  if (start < 0 || end <= start) return null;
  try {
    const value: unknown = JSON.parse(content.slice(start, end + 1));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const strings = (value: unknown, max: number, chars: number): string[] =>
  (Array.isArray(value) ? value : [])
    .filter((v): v is string => typeof v === 'string' && v.trim() !== '')
    .map((v) => cut(v, chars))
    .slice(0, max);

function declared(catalogue: AssistCatalogue, kind: AssistActionKind, name: string): boolean {
  switch (kind) {
    case 'tool':
      return catalogue.tools.some((t) => t.name === name);
    case 'intent':
      return catalogue.intents.some((i) => i.name === name);
    case 'step':
      return catalogue.steps.some((s) => s.name === name);
    case 'handoff':
      return catalogue.handoffs.includes(name);
    default:
      return true;
  }
}

/**
 * One action as the model wrote it, bounded; an action naming something the agent does not
 * declare becomes a hint (the model's advice is kept, the false name is not).
 */
function readAction(raw: unknown, catalogue: AssistCatalogue): AssistAction | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  const kinds: AssistActionKind[] = ['tool', 'intent', 'step', 'handoff', 'escalate', 'hint'];
  let kind: AssistActionKind = kinds.includes(r.kind as AssistActionKind) ? (r.kind as AssistActionKind) : 'hint';
  let name = typeof r.name === 'string' && r.name.trim() !== '' ? r.name.trim() : null;
  if (kind === 'escalate' && !catalogue.escalation) kind = 'hint';
  if (kind === 'hint' || kind === 'escalate') name = null;
  else if (!name || !declared(catalogue, kind, name)) {
    kind = 'hint';
    name = null;
  }
  const label = typeof r.label === 'string' && r.label.trim() !== '' ? cut(r.label, ASSIST_LIMITS.labelChars) : typeof r.name === 'string' ? cut(r.name, ASSIST_LIMITS.labelChars) : null;
  if (!label) return null;
  const confidence = typeof r.confidence === 'number' && Number.isFinite(r.confidence) ? Math.min(1, Math.max(0, Math.round(r.confidence * 100) / 100)) : 0.5;
  return { kind, name, label, reason: typeof r.reason === 'string' ? cut(r.reason, ASSIST_LIMITS.reasonChars) : '', confidence };
}

/** Suggestions from the model's answer; prose instead of JSON is taken as one reply. */
export function parseSuggestionAnswer(content: string, catalogue: AssistCatalogue): AssistSuggestionAnswer {
  const json = jsonObjectIn(content);
  if (!json) return { replies: content.trim() === '' ? [] : [cut(content, ASSIST_LIMITS.replyChars)], nextBestActions: [] };
  const actions = (Array.isArray(json.nextBestActions) ? json.nextBestActions : [])
    .map((a) => readAction(a, catalogue))
    .filter((a): a is AssistAction => a !== null)
    .slice(0, ASSIST_LIMITS.actions);
  return { replies: strings(json.replies, ASSIST_LIMITS.replies, ASSIST_LIMITS.replyChars), nextBestActions: actions };
}

/** A disposition summary from the model's answer; prose instead of JSON is taken as the summary. */
export function parseSummaryAnswer(content: string): AssistSummaryAnswer {
  const json = jsonObjectIn(content);
  if (!json) return { summary: cut(content, ASSIST_LIMITS.summaryChars), disposition: 'other', keyFacts: [] };
  const disposition = ASSIST_DISPOSITIONS.includes(json.disposition as AssistDisposition) ? (json.disposition as AssistDisposition) : 'other';
  return {
    summary: typeof json.summary === 'string' ? cut(json.summary, ASSIST_LIMITS.summaryChars) : '',
    disposition,
    keyFacts: strings(json.keyFacts, ASSIST_LIMITS.keyFacts, ASSIST_LIMITS.factChars),
  };
}

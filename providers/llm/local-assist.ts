// The offline `local` model's answer to an assist-mode request (abl/assist.ts): deterministic, so
// agent assist works on the dev stack and in tests with no API key. Next-best actions are the
// agent's declared tools, intents, steps and handoffs that share the most keywords with the
// customer's latest message (an intent's PATTERNS count as a full match); replies are built from
// the best of them (a step's prompt, a tool's missing inputs); the summary quotes the conversation.
import { readAssistRequest, type AssistAction, type AssistCatalogue, type AssistInput, type AssistSuggestionAnswer, type AssistSummaryAnswer } from '../../abl/assist';
import { keywords } from './keywords';

const cut = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
};
const words = (name: string) => name.replace(/[_-]+/g, ' ');

/** The share of the shorter side's keywords the two texts have in common (0 when none). */
function overlap(message: Set<string>, sample: string): number {
  const own = keywords(sample);
  if (own.length === 0 || message.size === 0) return 0;
  const shared = own.filter((w) => message.has(w)).length;
  return shared === 0 ? 0 : Math.round((shared / Math.min(own.length, message.size)) * 100) / 100;
}

const ESCALATION_WORDS = /\b(manager|supervisor|complain(t|ts)?|lawyer|unacceptable|escalate)\b/i;
const CLOSING_WORDS = /\b(thanks|thank you|that'?s all|perfect|great|solved|resolved|works now|bye)\b/i;

type Scored = AssistAction & { order: number };

function rankActions(catalogue: AssistCatalogue, text: string): Scored[] {
  const lower = text.toLowerCase();
  const message = new Set(keywords(text));
  const scored: Scored[] = [];
  let order = 0;
  const add = (action: AssistAction) => {
    if (action.confidence > 0) scored.push({ ...action, order: order++ });
  };
  for (const i of catalogue.intents) {
    const hit = i.patterns.some((p) => p.trim() !== '' && lower.includes(p.toLowerCase()));
    const confidence = hit ? 1 : Math.max(0, ...[...i.examples, i.description ?? '', words(i.name)].map((s) => overlap(message, s)));
    add({ kind: 'intent', name: i.name, label: `Handle as ${words(i.name)}`, reason: i.description ?? `The message matches the ${i.name} intent`, confidence });
  }
  for (const t of catalogue.tools) {
    const confidence = overlap(message, `${words(t.name)} ${t.description ?? ''}`);
    add({ kind: 'tool', name: t.name, label: `Use ${t.name}`, reason: t.description ?? `The message mentions what ${t.name} does`, confidence });
  }
  for (const s of catalogue.steps) {
    const confidence = overlap(message, `${words(s.name)} ${s.prompts.join(' ')}`);
    add({ kind: 'step', name: s.name, label: `Go to step ${s.name}`, reason: s.prompts[0] ?? `The message fits step ${s.name}`, confidence });
  }
  for (const h of catalogue.handoffs) {
    const confidence = overlap(message, words(h));
    add({ kind: 'handoff', name: h, label: `Hand over to ${words(h)}`, reason: `The message is about what ${h} handles`, confidence });
  }
  if (catalogue.escalation && ESCALATION_WORDS.test(text)) {
    add({ kind: 'escalate', name: null, label: 'Escalate to a supervisor', reason: catalogue.escalation.reasons[0] ?? 'The customer asks for someone more senior', confidence: 0.8 });
  }
  return scored.sort((a, b) => b.confidence - a.confidence || a.order - b.order);
}

function replyFor(action: AssistAction, catalogue: AssistCatalogue): string | null {
  switch (action.kind) {
    case 'tool': {
      const tool = catalogue.tools.find((t) => t.name === action.name);
      const needed = (tool?.params ?? []).filter((p) => p.required).map((p) => words(p.name));
      return needed.length > 0 ? `I can look into that for you. Could you give me your ${needed.join(' and ')}?` : 'I can look into that for you right away.';
    }
    case 'step': {
      const step = catalogue.steps.find((s) => s.name === action.name);
      return step?.prompts[0] ?? null;
    }
    case 'intent':
      return `I can help you with ${words(action.name ?? 'that')}.`;
    case 'handoff':
      return `I'll bring in our ${words(action.name ?? 'specialist')} team for this.`;
    case 'escalate':
      return "I understand. I'm bringing in a supervisor to help with this.";
    default:
      return null;
  }
}

export function localSuggestion(catalogue: AssistCatalogue, input: AssistInput): AssistSuggestionAnswer {
  const last = [...input.transcript].reverse().find((m) => m.author === 'USER')?.text ?? '';
  if (CLOSING_WORDS.test(last)) {
    return {
      replies: ["You're welcome! Is there anything else I can help you with?", 'Glad I could help. Have a great day!'],
      nextBestActions: [{ kind: 'hint', name: null, label: 'Wrap up the conversation', reason: 'The customer sounds satisfied', confidence: 0.7 }],
    };
  }
  const ranked = rankActions(catalogue, last).slice(0, 3);
  const actions: AssistAction[] = ranked.map(({ order: _order, ...a }) => a);
  if (actions.length === 0) {
    actions.push({ kind: 'hint', name: null, label: 'Ask a clarifying question', reason: `Nothing ${catalogue.agent} declares matches the message`, confidence: 0.3 });
  }
  const replies = [`Thanks for explaining. I understand: "${cut(last, 80)}".`];
  for (const a of actions) {
    const reply = replyFor(a, catalogue);
    if (reply && !replies.includes(reply)) replies.push(reply);
    if (replies.length === 3) break;
  }
  if (replies.length === 1) replies.push('Could you tell me a bit more so I can help?');
  return { replies, nextBestActions: actions };
}

const FACT_PATTERNS: [string, RegExp][] = [
  ['Reference', /\b[A-Z]{2,6}-?\d{3,}\b/g],
  ['Email', /\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g],
  ['Amount', /[$€£]\s?\d+(?:[.,]\d{1,2})?|\b\d+(?:[.,]\d{1,2})?\s?(?:USD|EUR|GBP|dollars|euros)\b/gi],
];

export function localSummary(catalogue: AssistCatalogue, input: AssistInput): AssistSummaryAnswer {
  const users = input.transcript.filter((m) => m.author === 'USER');
  const agentsSaid = input.transcript.filter((m) => m.author === 'AGENT');
  const first = users[0]?.text ?? '';
  const last = users.at(-1)?.text ?? '';
  const parts = [first ? `The customer contacted us about: "${cut(first, 160)}".` : 'The customer sent no message.'];
  if (input.agents.length > 0) parts.push(`Handled by ${input.agents.join(', then ')}${input.transfers.length > 0 ? ` (${input.transfers.length} transfer${input.transfers.length === 1 ? '' : 's'})` : ''}.`);
  parts.push(`${users.length} customer and ${agentsSaid.length} agent message${agentsSaid.length === 1 ? '' : 's'}.`);
  if (users.length > 1) parts.push(`Last customer message: "${cut(last, 160)}".`);
  const disposition = users.length === 0 ? 'abandoned' : CLOSING_WORDS.test(last) ? 'resolved' : agentsSaid.some((m) => /\b(follow up|call you back|get back to you|email you)\b/i.test(m.text)) ? 'follow_up' : 'unresolved';
  const facts: string[] = [];
  const all = input.transcript.map((m) => m.text).join('\n');
  for (const [label, pattern] of FACT_PATTERNS) {
    for (const match of all.match(pattern) ?? []) {
      const fact = `${label}: ${match.trim()}`;
      if (!facts.includes(fact)) facts.push(fact);
    }
  }
  const topic = rankActions(catalogue, users.map((m) => m.text).join(' ')).find((a) => a.kind === 'intent' || a.kind === 'tool');
  if (topic?.name) facts.push(`Topic: ${words(topic.name)}`);
  if (input.transfers.length > 0) facts.push(`Transfers: ${input.transfers.join('; ')}`);
  return { summary: parts.join(' '), disposition, keyFacts: facts.slice(0, 10) };
}

/** The JSON answer to an assist request, or null when the messages are not one. */
export function localAssistAnswer(system: string, user: string): string | null {
  const request = readAssistRequest(system, user);
  if (!request) return null;
  const answer = request.mode === 'suggest' ? localSuggestion(request.catalogue, request.input) : localSummary(request.catalogue, request.input);
  return JSON.stringify(answer);
}

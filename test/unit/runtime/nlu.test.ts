// NLU in the interpreter: an agent with an NLU section classifies each user message with one
// `call_llm` (purpose `classification`) before the rest of its turn, and `intent.*` drives
// HANDOFF, ESCALATE, flow branches and COMPLETE; low confidence, unreadable answers and failed
// calls have their documented outcome; agents without NLU make no such call.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { NLU_MARKER } from '../../../abl/nlu';
import type { RuntimeCommand, RuntimeEvent } from '../../../abl/runtime';
import { decideLocalReply } from '../../../providers/llm/local';
import { Driver, llmText, scripted } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

const hub = `SUPERVISOR: Hub
GOAL: "Route customers."
NLU:
  threshold: 0.6
  fallback_intent: other
  intents:
    - NAME: billing
      DESCRIPTION: "Invoices, charges and refunds"
      PATTERNS: ["invoice", "refund"]
      EXAMPLES: ["I was charged twice", "Where is my bill?"]
      ENTITIES: [currency, amount]
    - NAME: complaint
      PATTERNS: ["complain"]
      EXAMPLES: ["This service is terrible"]
    - NAME: goodbye
      PATTERNS: ["bye"]
      EXAMPLES: ["That's all, thanks"]
    - NAME: other
      DESCRIPTION: "Anything else"
  entities:
    - NAME: currency
      TYPE: enum
      VALUES: [USD, EUR]
      SYNONYMS:
        USD: [dollars, bucks]
    - NAME: amount
      TYPE: number
    - NAME: ref
      TYPE: pattern
      PATTERN: "RF-[0-9]+"
  glossary:
    - "RF -- a refund reference"
HANDOFF:
  - TO: Billing
    WHEN: intent.category == "billing" AND intent.entities.currency == "USD"
ESCALATE:
  triggers:
    - WHEN: intent.category == "complaint"
      REASON: "Complaint ({{intent.confidence}})"
COMPLETE:
  - WHEN: intent.category == "goodbye"
    RESPOND: "Goodbye!"
`;

const billing = `AGENT: Billing
GOAL: "Help with bills."
FLOW:
  steps: [route, refund, other]
  route:
    REASONING: false
    RESPOND: "Billing here."
    ON_INPUT:
      - IF: intent.category == "refund"
        THEN: refund
      - ELSE:
        THEN: other
  refund:
    REASONING: false
    RESPOND: "Refund of {{intent.entities.amount}}."
  other:
    REASONING: false
    RESPOND: "Anything else? ({{intent.category}})"
NLU:
  intents:
    - NAME: refund
      PATTERNS: [refund]
    - NAME: invoice
      PATTERNS: [invoice]
  entities:
    - NAME: amount
      TYPE: number
`;

function project(...files: Array<[string, string]>): CompilationOutput {
  const compiled = compileProject(files.map(([name, content]) => ({ path: `agents/${name}.agent.abl`, content })));
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: files[0]![0] };
}

/** A session whose LLM calls are answered by `answer`; every call is kept. */
function session(compiled: CompilationOutput, answer: (cmd: LlmCommand) => RuntimeEvent, options = {}): { d: Driver; calls: LlmCommand[] } {
  const calls: LlmCommand[] = [];
  const d = new Driver(scripted({ llm: (cmd) => (calls.push(cmd), answer(cmd)) }), compiled, 1_700_000_000_000, options);
  d.start();
  return { d, calls };
}

const answer = (v: Json) => (cmd: LlmCommand): RuntimeEvent => llmText(cmd.id, JSON.stringify(v));
const classifications = (calls: LlmCommand[]) => calls.filter((c) => c.purpose === 'classification');
const specOf = (cmd: LlmCommand): Record<string, unknown> => JSON.parse(cmd.request.messages[0]!.content.split('\n').at(-1)!) as Record<string, unknown>;

describe('NLU classification', () => {
  it('asks the model once with the intents, examples, entities and glossary, and hands off on intent.category', () => {
    const c = project(['Hub', hub], ['Billing', billing]);
    const { d, calls } = session(c, (cmd) =>
      cmd.agent === 'Hub'
        ? answer({ intent: 'billing', confidence: 0.9, entities: { currency: 'dollars', amount: '120' } })(cmd)
        : cmd.request.messages[1]!.content.includes('refund') ? answer({ intent: 'refund', confidence: 0.9, entities: { amount: 120 } })(cmd) : answer({ intent: 'invoice', confidence: 0.8 })(cmd),
    );
    const out = d.send('I was charged 120 dollars twice');
    const hubCall = classifications(calls)[0]!;
    expect(hubCall).toMatchObject({ agent: 'Hub', purpose: 'classification', request: { temperature: 0, tools: [] } });
    expect(hubCall.request.messages[0]!.content.startsWith(NLU_MARKER)).toBe(true);
    expect(hubCall.request.messages[1]).toEqual({ role: 'user', content: 'I was charged 120 dollars twice' });
    const spec = specOf(hubCall);
    expect((spec.intents as Array<{ name: string }>).map((i) => i.name)).toEqual(['billing', 'complaint', 'goodbye', 'other']);
    expect((spec.intents as Array<{ examples: string[] }>)[0]!.examples).toEqual(['I was charged twice', 'Where is my bill?']);
    expect(spec.entities).toContainEqual({ name: 'currency', type: 'enum', values: ['USD', 'EUR'], synonyms: { USD: ['dollars', 'bucks'] } });
    expect(spec.glossary).toEqual(['RF -- a refund reference']);
    // The synonym "dollars" became USD, so the HANDOFF rule held; Billing classified the same message itself.
    expect(d.active()).toBe('Billing');
    expect(classifications(calls).map((x) => x.agent)).toEqual(['Hub', 'Billing']);
    expect(out).toEqual(['Billing here.']);
    // The next message is classified by Billing alone (the active agent), and its flow branches on it.
    expect(d.send('a refund of the 120, please')).toEqual(['Refund of 120.']);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'intent').map((x) => [x.agent, x.decision])).toEqual([['Hub', 'billing'], ['Billing', 'invoice'], ['Billing', 'refund']]);
    // The classification is not part of any conversation history.
    expect(JSON.stringify(d.state.threads.map((t) => t.history))).not.toContain(NLU_MARKER);
  });

  it('a flow branch takes intent.category and its entities in the same turn', () => {
    const { d } = session(project(['Billing', billing]), answer({ intent: 'refund', confidence: 0.95, entities: { amount: 40 } }));
    expect(d.send('refund 40 please')).toEqual(['Refund of 40.']);
  });

  it('ESCALATE and COMPLETE see intent.* too', () => {
    const c = project(['Hub', hub], ['Billing', billing]);
    const esc = session(c, answer({ intent: 'complaint', confidence: 0.8 }));
    esc.d.send('I want to complain');
    expect(esc.d.commands.find((x) => x.type === 'escalate')).toMatchObject({ reason: 'Complaint (0.8)' });
    const bye = session(c, answer({ intent: 'goodbye', confidence: 0.99 }));
    expect(bye.d.send("That's all")).toEqual(['Goodbye!']);
    expect(bye.d.state.status).toBe('completed');
  });

  it('below the threshold the fallback intent applies; each message is classified afresh', () => {
    const c = project(['Hub', hub], ['Billing', billing]);
    const replies: Json[] = [{ intent: 'billing', confidence: 0.4, entities: { currency: 'USD' } }, { intent: 'goodbye', confidence: 0.7 }];
    const { d, calls } = session(c, (cmd) => (cmd.purpose === 'classification' ? answer(replies.shift() ?? null)(cmd) : llmText(cmd.id, 'How can I help?')));
    d.send('hmm, my bill maybe');
    expect(d.active()).toBe('Hub');
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'intent').map((x) => [x.decision, x.reasoning])).toEqual([
      ['billing: not used', 'confidence 0.40, threshold 0.6'],
      ['other', 'none, confidence 0.40, entities currency'],
    ]);
    expect(d.send('bye now')).toEqual(['Goodbye!']);
    expect(classifications(calls)).toHaveLength(2);
  });

  it('an unreadable answer or an unknown intent falls back to PATTERNS; a failed call too', () => {
    const c = project(['Hub', hub], ['Billing', billing]);
    const prose = session(c, (cmd) => (cmd.purpose === 'classification' ? llmText(cmd.id, 'It is about billing.') : llmText(cmd.id, 'ok')));
    prose.d.send('See you, bye');
    expect(prose.d.traceOf('error').map((e) => [e.kind, e.message])).toEqual([['nlu_error', 'Unreadable classification answer (no JSON object in the answer); the message is classified by PATTERNS']]);
    expect(prose.d.state.status).toBe('completed');

    const unknown = session(c, (cmd) => (cmd.purpose === 'classification' ? answer({ intent: 'weather', confidence: 1 })(cmd) : llmText(cmd.id, 'ok')));
    unknown.d.send('nothing in particular');
    expect(unknown.d.traceOf('error')[0]?.message).toContain('"weather" is not one of the intents');
    expect(unknown.d.traceOf('decision').find((x) => x.decisionKind === 'intent')).toMatchObject({ decision: 'other', reasoning: 'none, confidence 0.00' });

    const failed = session(c, (cmd) => (cmd.purpose === 'classification' ? { type: 'llm_result', commandId: cmd.id, ok: false, error: { kind: 'timeout', message: 'timed out' } } : llmText(cmd.id, 'ok')));
    failed.d.send('Goodbye, bye');
    expect(failed.d.traceOf('error')[0]).toMatchObject({ kind: 'nlu_error', message: 'Classification call failed: timed out; the message is classified by PATTERNS' });
    expect(failed.d.traceOf('decision').find((x) => x.decisionKind === 'intent')).toMatchObject({ decision: 'goodbye', reasoning: 'pattern, confidence 1.00' });
    expect(failed.d.state.status).toBe('completed');
  });

  it('entities that are not declared or not of their type are dropped and reported', () => {
    const { d } = session(project(['Billing', billing]), answer({ intent: 'refund', confidence: 1, entities: { amount: 'lots', colour: 'red' } }));
    expect(d.send('a refund')).toEqual(['Refund of .']);
    expect(d.traceOf('error').map((e) => e.message)).toEqual(['Entities not kept (not declared, or not of their type): amount, colour']);
  });

  it('a message whose metadata carries an intent is not classified again', () => {
    const c = project(['Hub', hub], ['Billing', billing]);
    const { d, calls } = session(c, (cmd) => llmText(cmd.id, 'ok'));
    d.send('bye', { intent: { category: 'billing', entities: { currency: 'USD' } } });
    expect(classifications(calls).filter((x) => x.agent === 'Hub')).toEqual([]);
    expect(d.active()).toBe('Billing');
  });

  it('runs recorded before NLU ran (nlu: false) make no classification call', () => {
    const { d, calls } = session(project(['Billing', billing]), (cmd) => llmText(cmd.id, 'ok'), { nlu: false });
    expect(d.send('refund 40 please')).toEqual(['Anything else? ()']);
    expect(calls).toEqual([]);
  });

  it('an agent without NLU makes no classification call and its history is unchanged', () => {
    const plain = `AGENT: Plain
GOAL: "Chat."
COMPLETE:
  - WHEN: intent.category == "goodbye"
    RESPOND: "Bye"
`;
    const { d, calls } = session(project(['Plain', plain]), (cmd) => llmText(cmd.id, 'Hello there.'));
    expect(d.send('bye')).toEqual(['Hello there.']);
    expect(calls.map((x) => x.purpose)).toEqual(['reasoning']);
    expect(d.state.threads[0]!.history.map((h) => h.role)).toEqual(['user', 'assistant']);
  });
});

describe('the offline local model classifies NLU requests', () => {
  const c = project(['Hub', hub], ['Billing', billing]);

  it('by example overlap, with entities by type, deterministically', () => {
    const { d, calls } = session(c, (cmd) => {
      const r = decideLocalReply({ messages: cmd.request.messages.map((m) => ({ role: m.role, content: m.content })) as never, tools: [] });
      return llmText(cmd.id, r.content);
    });
    d.send('This service is terrible, I paid 30 bucks for RF-123');
    const hubCall = classifications(calls)[0]!;
    const reply = decideLocalReply({ messages: hubCall.request.messages as never, tools: [] });
    expect(JSON.parse(reply.content)).toEqual({ intent: 'complaint', confidence: 1, entities: { currency: 'USD', amount: 30, ref: 'RF-123' } });
    expect(d.commands.find((x) => x.type === 'escalate')).toMatchObject({ reason: 'Complaint (1)' });
  });

  it('a pattern wins outright; no overlap is null with confidence 0', () => {
    const ask = (text: string) => {
      const messages = [{ role: 'system', content: `${NLU_MARKER}\nIntents (JSON):\n${JSON.stringify({ intents: [{ name: 'billing', patterns: ['invoice'], examples: ['Where is my bill?'], entities: [] }, { name: 'travel', patterns: [], examples: ['Book me a flight to Lisbon'], entities: [] }], entities: [], glossary: [] })}` }, { role: 'user', content: text }];
      return JSON.parse(decideLocalReply({ messages: messages as never, tools: [] }).content) as Record<string, Json>;
    };
    expect(ask('my INVOICE is wrong')).toEqual({ intent: 'billing', confidence: 1, entities: {} });
    expect(ask('a flight to Lisbon, please')).toEqual({ intent: 'travel', confidence: 1, entities: {} });
    expect(ask('flights and more flights to somewhere sunny')).toMatchObject({ intent: 'travel', confidence: 0.33 });
    expect(ask('the weather today')).toEqual({ intent: null, confidence: 0, entities: {} });
  });
});

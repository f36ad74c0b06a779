// Digressions taken by the NLU classification, HOOKS after_agent on a failed child, an escalation
// and an external end, ordinary calls of a mixed answer issued together, and `__fan_out__` over
// DELEGATE entries with an expression WHEN under EXECUTION max_fan_out; each option off (runs
// recorded before its patch) keeps the old behaviour.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { createInterpreter, delegateOutcome, type RuntimeCommand, type RuntimeEvent, type RuntimeOptions } from '../../../abl/runtime';
import { decideLocalReply } from '../../../providers/llm/local';
import { Driver, llmText, scripted, toolOk } from './driver';

type LlmCmd = Extract<RuntimeCommand, { type: 'call_llm' }>;
const project = (...files: [string, string][]): CompilationOutput => {
  const c = compileProject(files.map(([name, content]) => ({ path: `agents/${name}.agent.abl`, content })));
  expect(c.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return c;
};
/** The offline model's answer to any request (deterministic). */
const offline = (cmd: LlmCmd): RuntimeEvent => llmText(cmd.id, decideLocalReply({ messages: cmd.request.messages.map((m) => ({ role: m.role, content: m.content })) as never, tools: [] }).content);

describe('digressions matched by the NLU classification', () => {
  const desk = project(['Desk', `AGENT: Desk
GOAL: "Take an order."
NLU:
  intents:
    - NAME: speak_to_human
      PATTERNS: ["operator"]
      EXAMPLES: ["I would like a real person please"]
    - NAME: order
      EXAMPLES: ["I want to order a pizza"]
FLOW:
  steps: [ask_item, done]
  ask_item:
    REASONING: false
    GATHER:
      - item: required
        prompt: "What would you like?"
    DIGRESSIONS:
      - INTENT: "speak_to_human"
        KEYWORDS: [human agent]
        RESPOND: "Connecting you to a person."
        THEN: COMPLETE
    THEN: done
  done:
    REASONING: false
    RESPOND: "Ordered {{item}}."
`]);

  it('takes the digression the model named when no phrase matched', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, '{"intent":"speak_to_human","confidence":0.9}') }), desk);
    d.start();
    expect(d.send('could somebody real help me')).toEqual(['Connecting you to a person.']);
    expect(d.traceOf('decision').find((x) => x.decisionKind === 'digression')).toMatchObject({ decision: 'ask_item: speak_to_human -> COMPLETE', reasoning: 'step matched NLU intent "speak_to_human"' });
    expect(d.last.outcome).toBe('completed');
  });

  it('keeps phrases as the first pass, and the offline model classifies deterministically', () => {
    const d = new Driver(scripted({ llm: offline }), desk);
    d.start();
    // A keyword: the phrase decides, whatever the classification says.
    expect(d.send('human agent now')).toEqual(['Connecting you to a person.']);
    expect(d.traceOf('decision').find((x) => x.decisionKind === 'digression')?.reasoning).toBe('step matched "human agent"');
    // No keyword: the offline classifier's example overlap names the intent, the same every time.
    const again = new Driver(scripted({ llm: offline }), desk);
    again.start();
    expect(again.send('a real person please')).toEqual(['Connecting you to a person.']);
    expect(again.traceOf('decision').find((x) => x.decisionKind === 'digression')?.reasoning).toBe('step matched NLU intent "speak_to_human"');
  });

  it('another intent, or runs recorded before the patch, leave the message to the GATHER', () => {
    const other = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, '{"intent":"order","confidence":0.9}') }), desk);
    other.start();
    expect(other.send('pizza')).toEqual(['Ordered pizza.']);
    const old = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, '{"intent":"speak_to_human","confidence":0.9}') }), desk, undefined, { digressionIntents: false });
    old.start();
    expect(old.send('pizza')).toEqual(['Ordered pizza.']);
  });
});

const HOOKED = (name: string, extra = ''): string => `AGENT: ${name}
GOAL: "Help."
TOOLS:
  log_end(reason: string) -> {ok: boolean}
    type: http
    endpoint: "https://tools.example/log"
    method: POST
HOOKS:
  after_agent:
    SET: left = true
    RESPOND: "[${name} out]"
${extra}`;

describe('HOOKS after_agent on failure, escalation and an external end', () => {
  const c = project(
    ['Front', HOOKED('Front', `ESCALATE:
  triggers:
    - WHEN: angry == true
      REASON: "Angry customer"
`)],
    ['Helper', HOOKED('Helper', `FLOW:
  steps: [ask]
  ask:
    REASONING: false
    GATHER:
      - detail: required
        prompt: "Which detail?"
    THEN: COMPLETE
`)],
    ['Ender', `AGENT: Ender
GOAL: "Help."
TOOLS:
  log_end(reason: string) -> {ok: boolean}
    type: http
    endpoint: "https://tools.example/log"
    method: POST
HOOKS:
  after_agent:
    CALL: log_end(reason = "bye")
    RESPOND: "[logged]"
`],
  );

  const runChild = (options: Partial<RuntimeOptions> = {}) => {
    const child = createInterpreter(c, { now: () => 0, random: () => 0, ...options });
    return child.advance(child.initDelegateState('Helper', {}), { type: 'start' });
  };

  it('runs when a delegated child fails, and its reply is the child response', () => {
    const run = runChild();
    expect(run.trace).toContainEqual({ type: 'decision', data: expect.objectContaining({ decisionKind: 'hook', decision: 'after_agent', reasoning: 'failed (needs_input)' }) });
    expect(delegateOutcome(run.state)).toMatchObject({ status: 'failed', response: '[Helper out]', error: { kind: 'needs_input' } });
    const old = runChild({ failureHooks: false });
    expect(old.trace.some((t) => t.type === 'decision' && t.data.decisionKind === 'hook')).toBe(false);
  });

  it('runs when the agent escalates, before the human task', () => {
    const d = new Driver(scripted({}), { ...c, entry_agent: 'Front' });
    d.start({ type: 'start', sessionVariables: { angry: true } });
    d.send('hello');
    const hook = d.trace.findIndex((t) => t.type === 'decision' && t.data.decisionKind === 'hook');
    expect(hook).toBeGreaterThan(-1);
    expect(d.traceOf('decision')[d.traceOf('decision').findIndex((x) => x.decisionKind === 'hook')]).toMatchObject({ reasoning: 'escalation' });
    expect(d.responses).toContain('[Front out]');
    expect(d.commands.some((x) => x.type === 'escalate')).toBe(true);
    expect(d.vars().left).toBe(true);
  });

  it('runs on an external end: its CALL is an effect, then the session is completed', () => {
    const ender = createInterpreter({ ...c, entry_agent: 'Ender' }, { now: () => 0, random: () => 0 });
    const d = new Driver(scripted({ tools: { log_end: (args, id) => toolOk(id, { ok: args.reason === 'bye' }) } }), { ...c, entry_agent: 'Ender' });
    d.start();
    const started = d.state;
    const first = ender.advance(started, { type: 'end', reason: 'deleted' });
    expect(first.outcome).toBe('awaiting_effects');
    expect(first.trace).toContainEqual({ type: 'decision', data: expect.objectContaining({ decisionKind: 'hook', reasoning: 'session ended (deleted)' }) });
    expect(first.commands).toEqual([expect.objectContaining({ type: 'call_tool', tool: 'log_end', args: { reason: 'bye' } })]);
    const done = ender.advance(first.state, toolOk(first.commands[0]!.id, { ok: true }));
    expect(done.outcome).toBe('completed');
    expect(done.responses).toEqual(['[logged]']);
    expect(ender.advance(done.state, { type: 'end', reason: 'deleted' }).trace[0]).toMatchObject({ type: 'error', data: { kind: 'session_completed' } });
  });
});

describe('mixed answers and __fan_out__', () => {
  const HUB = `AGENT: Hub
GOAL: "Plan trips."
EXECUTION:
  max_fan_out: 2
TOOLS:
  weather(city: string) -> {forecast: string}
    type: http
    endpoint: "https://tools.example/weather"
    method: GET
  prices(city: string) -> {price: number}
    type: http
    endpoint: "https://tools.example/prices"
    method: GET
DELEGATE:
  - AGENT: Writer
    PURPOSE: "Write a short text"
  - AGENT: Scout
    WHEN: ready == true
    ON_FAILURE: continue
`;
  const child = (name: string): string => `AGENT: ${name}
GOAL: "Do the task"
FLOW:
  steps: [work]
  work:
    REASONING: false
    RESPOND: "${name} done"
    THEN: COMPLETE
`;
  const c = project(['Hub', HUB], ['Writer', child('Writer')], ['Scout', child('Scout')]);
  type Call = { name: string; args: Record<string, Json> };
  const answer = (id: string, calls: Call[]): RuntimeEvent => ({
    type: 'llm_result', commandId: id, ok: true, content: '', toolCalls: calls.map((x, i) => ({ id: `tc${i}`, name: x.name, arguments: JSON.stringify(x.args) })),
  });
  const llmThen = (calls: Call[], seen?: (cmd: LlmCmd) => void) => (cmd: LlmCmd): RuntimeEvent => {
    seen?.(cmd);
    const tools = cmd.request.messages.filter((m) => m.role === 'tool');
    return tools.length === 0 ? answer(cmd.id, calls) : llmText(cmd.id, `done: ${tools.map((m) => `${m.toolCallId}=${m.content}`).join(' | ')}`);
  };
  const delegateAll = (cmd: Extract<RuntimeCommand, { type: 'delegate' }>): RuntimeEvent => ({
    type: 'delegate_result', commandId: cmd.id, results: cmd.tasks.map((t) => ({ agent: t.agent, status: 'completed', response: `${t.agent} done`, returns: {} })),
  });
  const mixed: Call[] = [{ name: 'weather', args: { city: 'Rome' } }, { name: 'delegate_to_Writer', args: {} }, { name: 'prices', args: { city: 'Rome' } }];

  it('issues the ordinary calls of a mixed answer together, then the delegation, with results in call order', () => {
    const d = new Driver(scripted({ llm: llmThen(mixed), tools: { weather: () => undefined, prices: () => undefined }, delegate: delegateAll }), c, undefined, { parallelToolCalls: true });
    d.start();
    d.send('trip to Rome?');
    expect(d.open.map((x) => (x.type === 'call_tool' ? x.tool : x.type))).toEqual(['weather', 'prices']);
    const [weather, prices] = d.open as Extract<RuntimeCommand, { type: 'call_tool' }>[];
    d.feed(toolOk(prices!.id, { price: 9 }));
    const reply = d.feed(toolOk(weather!.id, { forecast: 'sun' }));
    expect(reply[0]).toMatch(/^done: tc0=\{"forecast":"sun"\} \| tc1=.*Writer done.* \| tc2=\{"price":9\}$/);
    const kinds = d.commands.map((x) => x.type);
    expect(kinds.indexOf('delegate')).toBeGreaterThan(kinds.lastIndexOf('call_tool'));
  });

  it('runs a mixed answer one call after another in runs recorded before the patch', () => {
    const d = new Driver(scripted({ llm: llmThen(mixed), tools: { weather: () => undefined, prices: () => undefined }, delegate: delegateAll }), c, undefined, { parallelToolCalls: true, mixedParallelTools: false });
    d.start();
    d.send('trip to Rome?');
    expect(d.open.map((x) => (x.type === 'call_tool' ? x.tool : x.type))).toEqual(['weather']);
  });

  it('__fan_out__ targets a WHEN entry while its WHEN holds, and max_fan_out caps the branches', () => {
    let offered: string[] = [];
    const tasks = { tasks: [{ target: 'Scout' }, { target: 'Writer' }, { target: 'Writer' }] };
    const seen = (cmd: LlmCmd) => {
      const fan = cmd.request.tools.find((t) => t.name === '__fan_out__')?.parameters as { properties: { tasks: { maxItems: number; items: { properties: { target: { enum: string[] } } } } } };
      offered = fan.properties.tasks.items.properties.target.enum;
      expect(fan.properties.tasks.maxItems).toBe(2);
    };
    const run = (vars: Record<string, Json>, options: Partial<RuntimeOptions> = {}) => {
      const d = new Driver(scripted({ llm: llmThen([{ name: '__fan_out__', args: tasks }], seen), delegate: delegateAll }), c, undefined, options);
      d.start({ type: 'start', sessionVariables: vars });
      return { d, reply: JSON.parse(d.send('go')[0]!.replace(/^done: tc0=/, '')) as Json[] };
    };
    const ready = run({ ready: true });
    expect(offered).toEqual(['Writer', 'Scout']);
    expect(ready.reply).toEqual([
      { target: 'Scout', status: 'completed', result: 'Scout done' },
      { target: 'Writer', status: 'completed', result: 'Writer done' },
      { target: 'Writer', status: 'failed', error: 'At most 2 tasks run at once' },
    ]);
    const notReady = run({ ready: false });
    expect(offered).toEqual(['Writer']);
    expect(notReady.reply[0]).toEqual({ target: 'Scout', status: 'failed', error: 'Cannot delegate to Scout' });
    const old = run({ ready: true }, { fanOutWhen: false });
    expect(old.reply[0]).toEqual({ target: 'Scout', status: 'failed', error: 'Cannot delegate to Scout' });
  });
});

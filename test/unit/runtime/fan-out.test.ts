// Reasoning agents' `__fan_out__` tool and parallel tool calls: one delegate command for all
// branches with failures reported, and several tool calls of one answer issued together and
// bound in the LLM's order (or one after another without the option).
import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { createInterpreter, delegateOutcome, type RuntimeCommand, type RuntimeEvent } from '../../../abl/runtime';
import { Driver, llmText, scripted, toolFail, toolOk } from './driver';

const HUB = `AGENT: Hub
GOAL: "Answer travel questions"
TOOLS:
  weather(city: string) -> {forecast: string}
    type: http
    endpoint: "https://tools.example/weather"
    method: GET
  prices(city: string) -> {price: number}
    type: http
    endpoint: "https://tools.example/prices"
    method: GET
  visa(country: string) -> {needed: boolean}
    type: http
    endpoint: "https://tools.example/visa"
    method: GET
DELEGATE:
  - AGENT: Researcher
    PURPOSE: "Research a topic"
    INPUT:
      topic: home_city
    RETURNS:
      note: research_note
    ON_FAILURE: continue
  - AGENT: Writer
    PURPOSE: "Write a short text"
    ON_FAILURE: continue
CONSTRAINTS:
  visas:
    - RESTRICT blocked_country == true BEFORE calling visa
      ON_FAIL: "Visa checks are off."
`;
const child = (name: string): string => `AGENT: ${name}
GOAL: "Do the task"
FLOW:
  steps: [work]
  work:
    REASONING: false
    SET:
      note = task
    RESPOND: "${name} did {{task}} on {{topic}}"
    THEN: COMPLETE
`;
const compiled: CompilationOutput = compileProject([
  { path: 'agents/Hub.agent.abl', content: HUB },
  { path: 'agents/Researcher.agent.abl', content: child('Researcher') },
  { path: 'agents/Writer.agent.abl', content: child('Writer') },
]);

type Call = { name: string; args: Record<string, Json> };
const answer = (id: string, calls: Call[]): RuntimeEvent => ({
  type: 'llm_result', commandId: id, ok: true, content: '', toolCalls: calls.map((c, i) => ({ id: `tc${i}`, name: c.name, arguments: JSON.stringify(c.args) })),
});
type LlmCmd = Extract<RuntimeCommand, { type: 'call_llm' }>;
/** The first LLM call answers with `calls`, the next with text that quotes the tool turns it saw. */
const llmThen = (calls: Call[]) => (cmd: LlmCmd): RuntimeEvent => {
  const tools = cmd.request.messages.filter((m) => m.role === 'tool');
  return tools.length === 0 ? answer(cmd.id, calls) : llmText(cmd.id, `done: ${tools.map((m) => `${m.toolCallId}=${m.content}`).join(' | ')}`);
};

test('compiles the fixture project', () => {
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
});

describe('__fan_out__', () => {
  test('is offered to a reasoning agent that can delegate, with its delegate targets', () => {
    let tools: LlmCmd['request']['tools'] = [];
    const d = new Driver(scripted({ llm: (cmd) => ((tools = cmd.request.tools), llmText(cmd.id, 'hi')) }), compiled);
    d.start();
    d.send('hello');
    const fanOut = tools.find((t) => t.name === '__fan_out__');
    expect(fanOut?.parameters).toMatchObject({ properties: { tasks: { items: { properties: { target: { enum: ['Researcher', 'Writer'] } }, required: ['target'] } } } });
  });

  test('is not offered to an agent with nothing to delegate to', () => {
    const only = compileProject([{ path: 'agents/Solo.agent.abl', content: 'AGENT: Solo\nGOAL: "g"\n' }]);
    let names: string[] = [];
    const d = new Driver(scripted({ llm: (cmd) => ((names = cmd.request.tools.map((t) => t.name)), llmText(cmd.id, 'hi')) }), only);
    d.start();
    d.send('hello');
    expect(names).toContain('__complete__');
    expect(names).not.toContain('__fan_out__');
  });

  test('runs all branches as one delegate command, reports the failed one and carries on', () => {
    const delegates: Extract<RuntimeCommand, { type: 'delegate' }>[] = [];
    const d = new Driver(
      scripted({
        llm: llmThen([{ name: '__fan_out__', args: { tasks: [{ target: 'Researcher', task: 'museums' }, { agent: 'Writer', task: 'a poem', input: { tone: 'dry' } }, { target: 'Nobody' }] } }]),
        delegate: (cmd) => {
          delegates.push(cmd);
          // The Researcher branch runs the real child; the Writer branch failed.
          const child = createInterpreter(compiled, { now: () => 0, random: () => 0 });
          const task = cmd.tasks[0]!;
          const run = child.advance(child.initDelegateState(task.agent, task.input), { type: 'start' });
          return { type: 'delegate_result', commandId: cmd.id, results: [delegateOutcome(run.state, task.returns), { agent: 'Writer', status: 'failed', error: { kind: 'timeout', message: 'timed out' } }] };
        },
      }),
      compiled,
    );
    d.start({ type: 'start', sessionVariables: { home_city: 'travel' } });
    const reply = d.send('plan my trip');
    expect(delegates).toHaveLength(1);
    expect(delegates[0]!.tasks).toEqual([
      { agent: 'Researcher', input: { topic: 'travel', task: 'museums' }, timeoutMs: null, purpose: 'museums', returns: ['note'] },
      { agent: 'Writer', input: { tone: 'dry', task: 'a poem' }, timeoutMs: null, purpose: 'a poem', returns: [] },
    ]);
    // The tool result lists every branch in the LLM's order; the refused one never ran.
    const toolTurn = reply[0]!.replace(/^done: tc0=/, '');
    expect(JSON.parse(toolTurn)).toEqual([
      { target: 'Researcher', status: 'completed', result: 'Researcher did museums on travel', returns: { note: 'museums' } },
      { target: 'Writer', status: 'failed', error: 'timed out' },
      { target: 'Nobody', status: 'failed', error: 'Cannot delegate to Nobody' },
    ]);
    expect(d.vars().research_note).toBe('museums');
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ kind: 'delegate_failed', message: 'Writer failed: timed out' })]);
    expect(d.traceOf('decision').find((x) => x.decisionKind === 'delegate')?.decision).toBe('Researcher: completed, Writer: failed');
    expect(d.last.outcome).toBe('turn_complete');
  });
});

describe('parallel tool calls', () => {
  const two: Call[] = [{ name: 'weather', args: { city: 'Rome' } }, { name: 'prices', args: { city: 'Rome' } }];

  test('issues every call of the answer at once and binds results in call order', () => {
    // Tools stay unanswered until fed by hand, in reverse order.
    const d = new Driver(scripted({ llm: llmThen(two), tools: { weather: () => undefined, prices: () => undefined } }), compiled, undefined, { parallelToolCalls: true });
    d.start();
    d.send('trip to Rome?');
    const issued = d.results.find((r) => r.commands.some((c) => c.type === 'call_tool'))!;
    expect(issued.commands.map((c) => (c.type === 'call_tool' ? c.tool : c.type))).toEqual(['weather', 'prices']);
    expect(d.open.map((c) => c.type)).toEqual(['call_tool', 'call_tool']);
    const [weather, prices] = d.open as Extract<RuntimeCommand, { type: 'call_tool' }>[];
    // The first result alone does not move the turn on.
    d.feed(toolOk(prices!.id, { price: 99 }));
    expect(d.last.outcome).toBe('awaiting_effects');
    expect(d.responses).toEqual([]);
    const reply = d.feed(toolOk(weather!.id, { forecast: 'sun' }));
    expect(reply).toEqual(['done: tc0={"forecast":"sun"} | tc1={"price":99}']);
    expect(d.traceOf('state_change').map((s) => s.variable)).toEqual(['weather', 'prices']);
  });

  test('one failed call is reported while the other result is used', () => {
    const d = new Driver(scripted({ llm: llmThen(two), tools: { weather: (_a, id) => toolFail(id, 'weather down'), prices: (_a, id) => toolOk(id, { price: 5 }) } }), compiled, undefined, { parallelToolCalls: true });
    d.start();
    expect(d.send('trip?')).toEqual(['done: tc0={"error":"weather down"} | tc1={"price":5}']);
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ kind: 'tool_error', message: 'weather down' })]);
    expect(d.vars().prices).toEqual({ price: 5 });
  });

  test('a call blocked by a constraint is not issued; the others run', () => {
    const calls: Call[] = [{ name: 'visa', args: { country: 'X' } }, ...two];
    const d = new Driver(scripted({ llm: llmThen(calls), tools: { weather: (_a, id) => toolOk(id, { forecast: 'rain' }), prices: (_a, id) => toolOk(id, { price: 1 }) } }), compiled, undefined, { parallelToolCalls: true });
    d.start({ type: 'start', sessionVariables: { blocked_country: true } });
    const reply = d.send('trip?');
    expect(d.commands.filter((c) => c.type === 'call_tool').map((c) => (c as { tool: string }).tool)).toEqual(['weather', 'prices']);
    expect(d.results.find((r) => r.commands.length === 2)).toBeDefined();
    expect(reply).toEqual(['Visa checks are off.', 'done: tc0={"error":"The call to visa was blocked by a constraint."} | tc1={"forecast":"rain"} | tc2={"price":1}']);
  });

  test('without the option, calls run one after another (the path of runs recorded before)', () => {
    const d = new Driver(scripted({ llm: llmThen(two), tools: { weather: () => undefined, prices: () => undefined } }), compiled);
    d.start();
    d.send('trip?');
    expect(d.open.map((c) => (c as { tool: string }).tool)).toEqual(['weather']);
    d.feed(toolOk(d.open[0]!.id, { forecast: 'fog' }));
    expect(d.open.map((c) => (c as { tool: string }).tool)).toEqual(['prices']);
    expect(d.feed(toolOk(d.open[0]!.id, { price: 3 }))).toEqual(['done: tc0={"forecast":"fog"} | tc1={"price":3}']);
  });

  test('the option is asked only for answers with several ordinary tool calls, and false keeps them sequential', () => {
    let asked = 0;
    const option = () => (asked++, false);
    const single = new Driver(scripted({ llm: llmThen([two[0]!]), tools: { weather: (_a, id) => toolOk(id, { forecast: 'sun' }) } }), compiled, undefined, { parallelToolCalls: option });
    single.start();
    single.send('weather?');
    const mixed = new Driver(
      scripted({ llm: llmThen([two[0]!, { name: 'delegate_to_Writer', args: {} }]), tools: { weather: (_a, id) => toolOk(id, { forecast: 'sun' }) }, delegate: (cmd) => ({ type: 'delegate_result', commandId: cmd.id, results: [{ agent: 'Writer', status: 'completed', response: 'ok' }] }) }),
      compiled, undefined, { parallelToolCalls: option },
    );
    mixed.start();
    mixed.send('weather and text?');
    expect(asked).toBe(0);
    const d = new Driver(scripted({ llm: llmThen(two), tools: { weather: () => undefined, prices: () => undefined } }), compiled, undefined, { parallelToolCalls: option });
    d.start();
    d.send('trip?');
    expect(asked).toBeGreaterThan(0);
    expect(d.open.map((c) => (c as { tool: string }).tool)).toEqual(['weather']);
  });
});

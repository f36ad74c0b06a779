// The analysis rules as pure functions: each fires at its threshold and not below it, points at
// the right spans and turns, and says what it saw; suggestions follow from the findings.
import { ANALYSIS_THRESHOLDS as T, analyseEvents, type AnalysedEvent, type Finding, median, pingPongReturns, stableJson } from '../../../core/sessions/analysis';

const base = Date.parse('2026-01-01T10:00:00Z');
let seq = 0;
function ev(type: string, data: Record<string, unknown>, turn = 1, parentSpanId: string | null = `t${turn}`): AnalysedEvent {
  seq++;
  return { type, spanId: `t${turn}.${seq}`, parentSpanId, turn, timestamp: new Date(base + seq), data };
}
beforeEach(() => {
  seq = 0;
});

const all = (a: ReturnType<typeof analyseEvents>): Finding[] => [...a.slowSpans, ...a.errorPatterns, ...a.decisionAnomalies, ...a.costHotspots];
const rule = (a: ReturnType<typeof analyseEvents>, name: string) => all(a).filter((f) => f.rule === name);
const llm = (latencyMs: number, extra: Record<string, unknown> = {}, turn = 1) =>
  ev('llm_call', { agent: 'Support', model: 'gpt-x', usage: { inputTokens: 100, outputTokens: 50 }, latencyMs, ...extra }, turn);
/** A tool call and its result (the result hangs under the call). */
function tool(name: string, input: unknown, result: Record<string, unknown>, turn = 1): AnalysedEvent[] {
  const call = ev('tool_call', { agent: 'Support', tool: name, input }, turn);
  return [call, ev('tool_result', { agent: 'Support', tool: name, ...result }, turn, call.spanId)];
}

describe('helpers', () => {
  it('median, stable JSON and ping-pong counts', () => {
    expect(median([])).toBe(0);
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(stableJson({ b: 1, a: [{ d: 2, c: 1 }] })).toBe(stableJson({ a: [{ c: 1, d: 2 }], b: 1 }));
    expect(pingPongReturns(['A', 'B', 'A', 'B'])).toBe(2);
    expect(pingPongReturns(['A', 'A', 'B', 'B', 'A'])).toBe(1);
    expect(pingPongReturns(['A', 'B', 'C', 'D'])).toBe(0);
  });
});

describe('slow spans', () => {
  it('flags a span at the absolute threshold, critical from the critical one, and not one just below', () => {
    const below = llm(T.slowSpanMs - 1);
    const at = llm(T.slowSpanMs);
    const critical = llm(T.criticalSpanMs, {}, 2);
    const a = analyseEvents([below, at, critical], []);
    const found = rule(a, 'slow_span_absolute');
    expect(found.map((f) => [f.spanIds, f.severity, f.observed, f.threshold, f.unit])).toEqual([
      [[critical.spanId], 'critical', T.criticalSpanMs, T.slowSpanMs, 'ms'],
      [[at.spanId], 'warning', T.slowSpanMs, T.slowSpanMs, 'ms'],
    ]);
    expect(found[0]!.turns).toEqual([2]);
    expect(found[0]!.subject).toEqual({ model: 'gpt-x', agent: 'Support' });
    expect(found[0]!.explanation).toContain(`${T.criticalSpanMs} ms`);
    expect(a.summary).toMatchObject({ critical: 1, warning: 1 });
  });

  it('flags a span far above the median of its type, given enough samples and above the floor', () => {
    const normal = [200, 220, 180, 210].map((d) => tool('lookup', { id: d }, { success: true, durationMs: d })).flat();
    const slow = tool('lookup', { id: 'slow' }, { success: true, durationMs: 5 * 210 + 100 });
    const a = analyseEvents([...normal, ...slow], []);
    const [f] = rule(a, 'slow_span_relative');
    expect(f).toMatchObject({ spanIds: [slow[1]!.spanId], threshold: T.slowSpanFactor, unit: 'ratio', subject: { tool: 'lookup', agent: 'Support' } });
    expect(f!.observed).toBeGreaterThanOrEqual(T.slowSpanFactor);
    // A suggestion names the tool and the finding.
    expect(a.suggestions).toContainEqual(expect.objectContaining({ kind: 'speed_up_tool', subject: { tool: 'lookup' }, findingIds: [f!.id] }));

    // Under the floor, a large ratio is noise.
    const tiny = [10, 11, 9, 10, 900].map((d) => tool('fast', null, { success: true, durationMs: d })).flat();
    expect(rule(analyseEvents(tiny, []), 'slow_span_relative')).toEqual([]);
    // Too few samples: no median to compare with.
    const few = [100, 100, 5_000].map((d) => tool('few', null, { success: true, durationMs: d })).flat();
    expect(rule(analyseEvents(few, []), 'slow_span_relative')).toEqual([]);
  });

  it('flags a slow turn, absolute and against the median turn', () => {
    const at = (turn: number, ms: number) => ({ turn, timestamp: new Date(base + turn * 1_000_000 + ms) });
    const messages = [at(1, 0), at(1, 500), at(2, 0), at(2, 600), at(3, 0), at(3, 400), at(4, 0), at(4, 5_000), at(5, 0), at(5, T.slowTurnMs)];
    const a = analyseEvents([], messages);
    expect(rule(a, 'slow_turn_absolute').map((f) => [f.turns, f.spanIds, f.observed])).toEqual([[[5], ['t5'], T.slowTurnMs]]);
    expect(rule(a, 'slow_turn_relative').map((f) => f.turns)).toEqual([[4]]);
  });
});

describe('error patterns', () => {
  it('groups the same tool error, firing at its threshold and critical at the critical count', () => {
    const fail = (msg: string) => tool('crm', { q: seq }, { success: false, error: { kind: 'tool_error', message: msg } });
    const under = analyseEvents(Array.from({ length: T.repeatedToolErrors - 1 }, () => fail('HTTP 500')).flat(), []);
    expect(rule(under, 'repeated_tool_error')).toEqual([]);

    const events = [...Array.from({ length: T.repeatedToolErrors }, () => fail('HTTP 500')).flat(), ...fail('HTTP 404')];
    const [f] = rule(analyseEvents(events, []), 'repeated_tool_error');
    expect(f).toMatchObject({ severity: 'warning', observed: T.repeatedToolErrors, spanCount: T.repeatedToolErrors, subject: { tool: 'crm' } });
    expect(f!.explanation).toContain('HTTP 500');

    const many = analyseEvents(Array.from({ length: T.criticalRepeats }, () => fail('HTTP 500')).flat(), []);
    expect(rule(many, 'repeated_tool_error')[0]!.severity).toBe('critical');
    expect(many.suggestions.map((s) => s.kind)).toContain('handle_tool_failure');
  });

  it('flags a tool called many times in one turn, but not the same count spread over turns', () => {
    const oneTurn = Array.from({ length: T.toolCallsPerTurn }, () => tool('search', { q: 'x' }, { success: true, durationMs: 5 }, 3)).flat();
    const [f] = rule(analyseEvents(oneTurn, []), 'tool_retry_loop');
    expect(f).toMatchObject({ turns: [3], observed: T.toolCallsPerTurn, subject: { tool: 'search' } });
    const spread = Array.from({ length: T.toolCallsPerTurn }, (_, i) => tool('search', { q: i }, { success: true, durationMs: 5 }, i + 1)).flat();
    expect(rule(analyseEvents(spread, []), 'tool_retry_loop')).toEqual([]);
  });

  it('flags timeouts and suggests a longer timeout', () => {
    const events = tool('slowapi', {}, { success: false, error: { kind: 'tool_timeout', message: 'timed out' } });
    const a = analyseEvents(events, []);
    expect(rule(a, 'tool_timeout')[0]).toMatchObject({ observed: 1, spanIds: [events[1]!.spanId] });
    expect(a.suggestions).toContainEqual(expect.objectContaining({ kind: 'raise_tool_timeout', subject: { tool: 'slowapi' } }));
  });

  it('groups repeated errors by kind and message, leaving tool errors to the tool rules', () => {
    const err = (message: string, extra: Record<string, unknown> = {}) => ev('error', { agent: 'A', kind: 'validation_error', message, ...extra });
    const events = [err('bad date'), err('bad date'), err('bad date'), err('other'), err('x', { tool: 'crm' }), err('x', { tool: 'crm' }), err('x', { tool: 'crm' })];
    const found = rule(analyseEvents(events, []), 'repeated_error');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ observed: 3, subject: { errorKind: 'validation_error' } });
  });

  it('notes guardrail provider failures and LLM fallbacks', () => {
    const a = analyseEvents([ev('guardrail_eval', { guardrail: 'mod', passed: true, action: 'block', error: 'HTTP 401' }), llm(100, { fallbackFrom: 'gpt-big', model: 'gpt-small' })], []);
    expect(rule(a, 'guardrail_provider_error')[0]).toMatchObject({ subject: { guardrail: 'mod' }, severity: 'warning' });
    expect(rule(a, 'llm_fallback')[0]).toMatchObject({ subject: { model: 'gpt-big', fallbackModel: 'gpt-small' }, severity: 'info' });
  });
});

describe('decision anomalies', () => {
  const decision = (decisionKind: string, value: string, turn = 1) => ev('decision', { decisionKind, decision: value, agent: 'Flow' }, turn);

  it('flags the same decision taken again and again', () => {
    const under = Array.from({ length: T.repeatedDecisions - 1 }, (_, i) => decision('on_input', 'ask_date: no match', i + 1));
    expect(rule(analyseEvents(under, []), 'repeated_decision')).toEqual([]);
    const at = [...under, decision('on_input', 'ask_date: no match', 9)];
    const [f] = rule(analyseEvents(at, []), 'repeated_decision');
    expect(f).toMatchObject({ observed: T.repeatedDecisions, subject: { decisionKind: 'on_input', agent: 'Flow' } });
    expect(f!.turns).toEqual([1, 2, 3, 4, 9]);
  });

  it('flags a variable set back and forth, and FLOW steps bouncing', () => {
    const set = (value: unknown) => ev('state_change', { agent: 'Flow', variable: 'plan', value });
    const a = analyseEvents([set('basic'), set('pro'), set('basic'), set('pro')], []);
    expect(rule(a, 'state_ping_pong')[0]).toMatchObject({ observed: 2, subject: { variable: 'plan', agent: 'Flow' } });
    // Moving forward is not a ping-pong; internal variables (`_session`) are left out.
    expect(rule(analyseEvents([set('a'), set('b'), set('c'), set('d')], []), 'state_ping_pong')).toEqual([]);
    const internal = ['reset', 'x', 'reset', 'x'].map((value) => ev('state_change', { variable: '_session', value }));
    expect(rule(analyseEvents(internal, []), 'state_ping_pong')).toEqual([]);

    const flow = analyseEvents([decision('flow_transition', 'ask -> confirm'), decision('flow_transition', 'confirm -> ask'), decision('flow_transition', 'ask -> confirm')], []);
    expect(rule(flow, 'flow_ping_pong')[0]).toMatchObject({ observed: 2, subject: { agent: 'Flow' } });
    expect(flow.suggestions).toContainEqual(expect.objectContaining({ kind: 'add_exit_condition', subject: { agent: 'Flow' } }));
  });

  it('flags handoffs back and forth, not a chain through several agents', () => {
    const handoff = (fromAgent: string, toAgent: string) => ev('handoff', { fromAgent, toAgent, reason: 'r' });
    const loop = analyseEvents([handoff('A', 'B'), handoff('B', 'A'), handoff('A', 'B')], []);
    expect(rule(loop, 'handoff_loop')[0]).toMatchObject({ observed: 2, spanCount: 3, subject: { agents: 'A,B' } });
    expect(loop.suggestions.map((s) => s.kind)).toContain('tighten_handoff_rules');
    expect(rule(analyseEvents([handoff('A', 'B'), handoff('B', 'C'), handoff('C', 'D')], []), 'handoff_loop')).toEqual([]);
  });

  it('reports guardrail blocks, a warning (and a suggestion) from the warning count', () => {
    const block = () => ev('guardrail_eval', { guardrail: 'no_pii', kind: 'input', passed: false, action: 'block', agent: 'A' });
    const pass = ev('guardrail_eval', { guardrail: 'no_pii', kind: 'input', passed: true, action: 'block', agent: 'A' });
    const one = analyseEvents([block(), pass], []);
    expect(rule(one, 'guardrail_block')[0]).toMatchObject({ severity: 'info', observed: 1 });
    expect(one.suggestions).toEqual([]);
    const many = analyseEvents(Array.from({ length: T.guardrailBlocksWarning }, block), []);
    expect(rule(many, 'guardrail_block')[0]).toMatchObject({ severity: 'warning', observed: T.guardrailBlocksWarning });
    expect(many.suggestions).toContainEqual(expect.objectContaining({ kind: 'review_guardrail', subject: { guardrail: 'no_pii' } }));
  });

  it('reports steps that ran out of attempts', () => {
    const a = analyseEvents([decision('max_attempts', 'ask_date exhausted after 3')], []);
    expect(rule(a, 'attempts_exhausted')[0]).toMatchObject({ observed: 1, severity: 'warning' });
  });
});

describe('cost hotspots', () => {
  it('flags a prompt large against its output, not a large prompt with a large answer', () => {
    const heavy = ev('llm_call', { agent: 'A', model: 'm', purpose: 'response', usage: { inputTokens: T.heavyPromptTokens, outputTokens: 10 } });
    const balanced = ev('llm_call', { agent: 'A', model: 'm', usage: { inputTokens: T.heavyPromptTokens, outputTokens: T.heavyPromptTokens } });
    const a = analyseEvents([heavy, balanced], []);
    expect(rule(a, 'heavy_prompt').map((f) => [f.spanIds, f.observed, f.severity, f.subject.purpose])).toEqual([[[heavy.spanId], T.heavyPromptTokens, 'info', 'response']]);
    expect(a.suggestions).toContainEqual(expect.objectContaining({ kind: 'shorten_prompt', subject: { agent: 'A' } }));
  });

  it('flags the same successful tool call repeated with the same input, whatever the key order', () => {
    const calls = [tool('rates', { from: 'EUR', to: 'USD' }, { success: true, durationMs: 5 }), tool('rates', { to: 'USD', from: 'EUR' }, { success: true, durationMs: 5 }, 2), tool('rates', { from: 'EUR', to: 'USD' }, { success: true, durationMs: 5 }, 3)];
    const a = analyseEvents(calls.flat(), []);
    const [f] = rule(a, 'duplicate_tool_call');
    expect(f).toMatchObject({ observed: 3, turns: [1, 2, 3], spanIds: calls.map((c) => c[0]!.spanId) });
    expect(a.suggestions).toContainEqual(expect.objectContaining({ kind: 'cache_tool_result', subject: { tool: 'rates' }, findingIds: [f!.id] }));
    // Mocked results (test turns) do not count.
    const mocked = [1, 2, 3].map((turn) => tool('rates', { a: 1 }, { success: true, mocked: true }, turn)).flat();
    expect(rule(analyseEvents(mocked, []), 'duplicate_tool_call')).toEqual([]);
  });
});

it('a healthy session has no findings and no suggestions', () => {
  const events = [llm(300), ...tool('lookup', { id: 1 }, { success: true, durationMs: 120 }), llm(280), ev('response', { agent: 'Support', text: 'Done.' })];
  const a = analyseEvents(events, [{ turn: 1, timestamp: new Date(base) }, { turn: 1, timestamp: new Date(base + 900) }]);
  expect(a).toMatchObject({ eventCount: 5, truncated: false, slowSpans: [], errorPatterns: [], decisionAnomalies: [], costHotspots: [], suggestions: [], summary: { findings: 0 } });
});

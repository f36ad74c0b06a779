// The containment and status rules of a session's summary (workflows/session-insight.ts), and the
// tallies they are judged from: every rule's case, in the order they are applied.
import { analyticsStatusOf, containmentOf, emptyInsight, insightSummary, MAX_DIMENSIONS, tallyTurn, type SessionInsight } from '../../../workflows/session-insight';

const ev = (type: string, data: Record<string, unknown> = {}) => ({ seq: 0, type, spanId: 't1.1', parentSpanId: 't1', timestamp: '2026-01-01T00:00:00Z', data });
const talked = (): SessionInsight => {
  const i = emptyInsight();
  tallyTurn(i, [ev('llm_call', { usage: { inputTokens: 12, outputTokens: 5 } })], [{ role: 'user' }, { role: 'assistant' }]);
  return i;
};

it('counts messages by role, events by kind and the tokens of llm calls', () => {
  const i = talked();
  tallyTurn(i, [ev('decision', { decisionKind: 'route' }), ev('tool_call'), ev('tool_result'), ev('error', { kind: 'x' })], [{ role: 'user' }]);
  expect(insightSummary(i, null, false)).toMatchObject({
    messageCounts: { user: 2, agent: 1 },
    traceEventCounts: { llm_call: 1, decision: 1, tool_call: 1, error: 1 },
    tokenUsage: { inputTokens: 12, outputTokens: 5 },
  });
});

it('takes _meta.<name> and _meta = {…} as dimensions: scalars only, cut to 256 characters, at most 32, null removes one', () => {
  const i = emptyInsight();
  tallyTurn(i, [
    ev('state_change', { variable: '_meta.region', value: 'emea' }),
    ev('state_change', { variable: '_meta', value: { tier: 3, vip: true, nested: { no: 1 }, list: [1] } }),
    ev('state_change', { variable: '_meta.long', value: 'x'.repeat(300) }),
    ev('state_change', { variable: '_meta.$bad', value: 'x' }),
    ev('state_change', { variable: 'region', value: 'not a dimension' }),
  ], []);
  expect(i.dimensions).toEqual({ region: 'emea', tier: 3, vip: true, long: 'x'.repeat(256) });
  tallyTurn(i, [ev('state_change', { variable: '_meta.vip', value: null })], []);
  expect(i.dimensions.vip).toBeUndefined();
  for (let n = 0; n < 40; n++) tallyTurn(i, [ev('state_change', { variable: `_meta.d${n}`, value: n })], []);
  expect(Object.keys(i.dimensions)).toHaveLength(MAX_DIMENSIONS);
});

it('classifies containment by the documented rules, first match', () => {
  const escalated = talked();
  tallyTurn(escalated, [ev('decision', { decisionKind: 'escalate' })], []);
  expect(containmentOf(escalated, null)).toBe('escalated');
  expect(containmentOf(escalated, 'completed')).toBe('escalated');
  expect(containmentOf(talked(), 'transferred')).toBe('escalated');
  expect(containmentOf(talked(), null)).toBe('contained');
  expect(containmentOf(talked(), 'completed')).toBe('contained_resolved');
  expect(containmentOf(emptyInsight(), 'idle_timeout')).toBe('abandoned');
  expect(containmentOf(talked(), 'user_left')).toBe('abandoned');
  expect(containmentOf(talked(), 'no_input')).toBe('abandoned');
  const failed = talked();
  tallyTurn(failed, [ev('error', { kind: 'timeout' })], [{ role: 'user' }]);
  expect(containmentOf(failed, 'idle_timeout')).toBe('contained_unresolved');
  // A later turn that went well clears it; the end's own row (no messages, no error) does not count.
  tallyTurn(failed, [ev('llm_call')], [{ role: 'user' }, { role: 'assistant' }]);
  tallyTurn(failed, [ev('state_change', { variable: '_session', value: 'ended' })], []);
  expect(containmentOf(failed, 'call_ended')).toBe('contained_partial');
  expect(containmentOf(talked(), 'terminated')).toBe('contained_partial');
});

it('gives the analytics status from the same rules, escalated while a person holds the session', () => {
  const escalated = talked();
  tallyTurn(escalated, [ev('decision', { decisionKind: 'escalate' })], []);
  expect(analyticsStatusOf(escalated, null, true)).toBe('escalated');
  expect(analyticsStatusOf(escalated, null, false)).toBe('active');
  expect(analyticsStatusOf(talked(), null, false)).toBe('active');
  expect(analyticsStatusOf(talked(), 'completed', false)).toBe('completed');
  expect(analyticsStatusOf(escalated, 'idle_timeout', false)).toBe('escalated');
  expect(analyticsStatusOf(emptyInsight(), 'idle_timeout', false)).toBe('abandoned');
  const failed = talked();
  tallyTurn(failed, [ev('error')], [{ role: 'user' }]);
  expect(analyticsStatusOf(failed, 'deleted', false)).toBe('failed');
  expect(analyticsStatusOf(talked(), 'idle_timeout', false)).toBe('ended');
});

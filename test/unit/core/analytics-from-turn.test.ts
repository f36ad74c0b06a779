// The analytics events derived from a session's recorded rows (core/analytics/from-turn.ts): one
// per message and per trace event that has one, in the right category, with deterministic ids,
// the LLM call's model, tokens and cost, and nothing of what users typed.
import { analyticsEventsOfTurn, analyticsOfTraceEvent, type TurnAnalyticsInput, type TurnTraceEvent } from '../../../core/analytics/from-turn';

const T0 = '2026-12-06T10:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const trace = (seq: number, type: string, data: Record<string, unknown>): TurnTraceEvent => ({ seq, type, spanId: `t1.${seq + 1}`, timestamp: at(seq * 10 + 5), data });

function turn(over: Partial<TurnAnalyticsInput> = {}): TurnAnalyticsInput {
  return {
    tenantId: 'ten',
    projectId: 'proj',
    sessionId: 's1',
    turn: 1,
    channel: 'api',
    currentAgent: 'Support_Hub',
    messages: [],
    traceEvents: [],
    summary: { status: 'active', lastActivityAt: at(1000) },
    ...over,
  };
}

describe('analyticsOfTraceEvent', () => {
  it('gives an LLM call its model, provider, tokens in and out, cost and latency', () => {
    const e = analyticsOfTraceEvent(
      trace(3, 'llm_call', { agent: 'Billing', purpose: 'reasoning', model: 'gpt-4o-mini', provider: 'openai', usage: { inputTokens: 120, outputTokens: 30 }, latencyMs: 412, estimatedCost: 0.000036, finishReason: 'stop' }),
    );
    expect(e).toMatchObject({
      category: 'llm',
      eventType: 'llm.call',
      agentName: 'Billing',
      durationMs: 412,
      tokens: 150,
      cost: 0.000036,
      metadata: { model: 'gpt-4o-mini', provider: 'openai', tokens_in: 120, tokens_out: 30, cost: 0.000036, cost_known: true, purpose: 'reasoning' },
    });
  });

  it('counts an unpriced model as cost 0 and says the cost is unknown', () => {
    const e = analyticsOfTraceEvent(trace(0, 'llm_call', { agent: 'A', model: 'local', provider: 'local', usage: { inputTokens: 5, outputTokens: 2 }, latencyMs: 1, estimatedCost: null }));
    expect(e).toMatchObject({ cost: 0, tokens: 7, metadata: { cost: 0, cost_known: false } });
  });

  it("keeps a tool call's name but neither its arguments nor its output", () => {
    const call = analyticsOfTraceEvent(trace(1, 'tool_call', { agent: 'A', tool: 'lookup_order', input: { card: '4111111111111111' } }));
    const ok = analyticsOfTraceEvent(trace(2, 'tool_result', { agent: 'A', tool: 'lookup_order', success: true, durationMs: 88, mocked: false, output: { ssn: '123-45-6789' } }));
    expect(call).toEqual({ category: 'tool', eventType: 'tool.call', agentName: 'A', metadata: { tool: 'lookup_order' } });
    expect(ok).toMatchObject({ category: 'tool', eventType: 'tool.result', durationMs: 88, error: null, metadata: { tool: 'lookup_order', success: true } });
    expect(JSON.stringify([call, ok])).not.toMatch(/4111|123-45/);
  });

  it("sets `error` on a failed tool result, from the failure's kind and message", () => {
    const e = analyticsOfTraceEvent(trace(2, 'tool_result', { agent: 'A', tool: 't', success: false, durationMs: 30000, error: { kind: 'tool_timeout', message: 'timed out' } }));
    expect(e).toMatchObject({ eventType: 'tool.result', error: 'tool_timeout: timed out', metadata: { success: false } });
  });

  it('puts handoffs and delegations in the agent category, a delegation with its duration', () => {
    expect(analyticsOfTraceEvent(trace(1, 'handoff', { fromAgent: 'Hub', toAgent: 'Billing', reason: 'billing question' }))).toMatchObject({
      category: 'agent',
      eventType: 'agent.handoff',
      agentName: 'Hub',
      metadata: { from_agent: 'Hub', to_agent: 'Billing', reason: 'billing question' },
    });
    expect(analyticsOfTraceEvent(trace(1, 'delegate', { fromAgent: 'Trip', toAgent: 'Hotel', task: 'find', status: 'completed', duration_ms: 900 }))).toMatchObject({
      category: 'agent',
      eventType: 'agent.delegate',
      durationMs: 900,
      error: null,
    });
    expect(analyticsOfTraceEvent(trace(1, 'delegate', { fromAgent: 'Trip', toAgent: 'Hotel', status: 'timed_out', duration_ms: 5000 }))).toMatchObject({ error: 'timed_out' });
  });

  it('files decisions by kind: flow, gather, agent and evaluation', () => {
    const kind = (decisionKind: string) => analyticsOfTraceEvent(trace(1, 'decision', { decisionKind, decision: 'x', agent: 'A', reasoning: 'the user said their name is Ann' }));
    expect(kind('flow_transition')).toMatchObject({ category: 'flow', eventType: 'decision.flow_transition' });
    expect(kind('inference')).toMatchObject({ category: 'gather', eventType: 'decision.inference' });
    expect(kind('escalate')).toMatchObject({ category: 'agent' });
    expect(kind('constraint')).toMatchObject({ category: 'evaluation' });
    expect(JSON.stringify(kind('inference'))).not.toContain('Ann');
  });

  it('tells a gathered field from any other variable, and keeps neither value', () => {
    expect(analyticsOfTraceEvent(trace(1, 'state_change', { agent: 'A', variable: 'email', value: 'ann@example.com', source: 'gather' }))).toEqual({
      category: 'gather',
      eventType: 'gather.field_set',
      agentName: 'A',
      metadata: { field: 'email' },
    });
    expect(analyticsOfTraceEvent(trace(1, 'state_change', { agent: 'A', variable: 'step', value: 'two' }))).toEqual({
      category: 'flow',
      eventType: 'flow.state_change',
      agentName: 'A',
      metadata: { variable: 'step' },
    });
    expect(analyticsOfTraceEvent(trace(1, 'state_change', { variable: '_session', value: 'reset' }))).toMatchObject({ category: 'session', eventType: 'session.reset' });
    expect(analyticsOfTraceEvent(trace(1, 'state_change', { variable: '_session', value: 'ended', reason: 'idle' }))).toBeNull();
  });

  it('files a guardrail evaluation under evaluation, with whether it passed', () => {
    expect(analyticsOfTraceEvent(trace(1, 'guardrail_eval', { guardrail: 'no_pii', kind: 'output', passed: false, action: 'redact', agent: 'A' }))).toMatchObject({
      category: 'evaluation',
      eventType: 'guardrail.evaluated',
      error: null,
      metadata: { guardrail: 'no_pii', passed: false, action: 'redact' },
    });
  });

  it('files errors by what failed, with the message as `error`', () => {
    expect(analyticsOfTraceEvent(trace(1, 'error', { agent: 'A', kind: 'tool_error', message: 'HTTP 500', tool: 'lookup' }))).toMatchObject({ category: 'tool', eventType: 'tool.error', error: 'HTTP 500', metadata: { tool: 'lookup' } });
    expect(analyticsOfTraceEvent(trace(1, 'error', { agent: 'A', source: 'llm', kind: 'timeout', message: 'timed out', durationMs: 60000 }))).toMatchObject({ category: 'llm', eventType: 'llm.error', durationMs: 60000, error: 'timed out' });
    expect(analyticsOfTraceEvent(trace(1, 'error', { agent: 'A', kind: 'human_task_error', message: 'limit' }))).toMatchObject({ category: 'system', eventType: 'error.human_task_error', error: 'limit' });
  });

  it('has no event of its own for a response (the assistant message is one)', () => {
    expect(analyticsOfTraceEvent(trace(1, 'response', { agent: 'A', text: 'hi' }))).toBeNull();
  });
});

describe('analyticsEventsOfTurn', () => {
  it("gives the session's first write a session.started event and every event the session, channel and ids of its rows", () => {
    const events = analyticsEventsOfTurn(
      turn({
        messages: [
          { seq: 1, role: 'user', agent: null, content: 'my card is 4111', timestamp: at(0) },
          { seq: 2, role: 'assistant', agent: 'Support_Hub', content: 'Hello', timestamp: at(900) },
        ],
        traceEvents: [trace(0, 'llm_call', { agent: 'Support_Hub', model: 'm', provider: 'p', usage: { inputTokens: 1, outputTokens: 2 }, estimatedCost: 0.5 }), trace(1, 'response', { agent: 'Support_Hub', text: 'Hello' })],
      }),
    );
    expect(events.map((e) => [e.id, e.category, e.eventType])).toEqual([
      ['s1:started', 'session', 'session.started'],
      ['s1:m1', 'message', 'message.user'],
      ['s1:t0', 'llm', 'llm.call'],
      ['s1:m2', 'message', 'message.assistant'],
    ]);
    for (const e of events) expect(e).toMatchObject({ tenantId: 'ten', projectId: 'proj', sessionId: 's1', channel: 'api', agentName: 'Support_Hub' });
    expect(events[0]!.timestamp.toISOString()).toBe(at(0));
    expect(events[1]!.metadata).toEqual({ role: 'user', turn: 1, chars: 15 });
    expect(events[2]!.metadata).toMatchObject({ turn: 1, span_id: 't1.1' });
    expect(JSON.stringify(events)).not.toContain('4111');
  });

  it('gives a later write no session.started, and the same rows the same ids', () => {
    const input = turn({ messages: [{ seq: 5, role: 'user', agent: null, content: 'x', timestamp: at(0) }], traceEvents: [trace(9, 'tool_call', { agent: 'A', tool: 't' })] });
    const ids = analyticsEventsOfTurn(input).map((e) => e.id);
    expect(ids).toEqual(['s1:m5', 's1:t9']);
    expect(analyticsEventsOfTurn(input).map((e) => e.id)).toEqual(ids);
  });

  it("ends with session.ended and the session's totals when the summary says it ended", () => {
    const events = analyticsEventsOfTurn(
      turn({
        summary: { status: 'ended', endedAt: at(5000), endReason: 'user_ended', durationMs: 5000, messageCount: 4, tokenCount: 300, estimatedCost: 0.01, errorCount: 1, lastActivityAt: at(4000) },
      }),
    );
    expect(events).toEqual([
      expect.objectContaining({
        id: 's1:ended',
        category: 'session',
        eventType: 'session.ended',
        durationMs: 5000,
        timestamp: new Date(at(5000)),
        metadata: expect.objectContaining({ end_reason: 'user_ended', message_count: 4, token_count: 300, estimated_cost: 0.01, error_count: 1 }),
      }),
    ]);
    // The LLM events carry the tokens and cost that sums add up; the session's end adds none.
    expect(events[0]!.tokens ?? 0).toBe(0);
    expect(events[0]!.cost ?? 0).toBe(0);
  });
});

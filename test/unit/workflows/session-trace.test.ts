// TurnTrace: span ids, and a tool_result's output rewritten by the interpreter's tool_output
// guardrails before the turn's events are stored or returned.
import { TurnTrace } from '../../../workflows/session-trace';

function traceWithResult(output: unknown) {
  const trace = new TurnTrace(3, 10);
  const call = trace.add('tool_call', { tool: 'lookup', input: { q: 'x' } });
  trace.addToolResult('c4', { tool: 'lookup', success: true, output }, call);
  return { trace, call };
}

it('numbers events under the turn root and hangs a tool_result under its call', () => {
  const { trace, call } = traceWithResult({ answer: 'a' });
  expect(trace.events.map((e) => [e.seq, e.type, e.spanId, e.parentSpanId])).toEqual([
    [10, 'tool_call', 't3.1', 't3'],
    [11, 'tool_result', 't3.2', call],
  ]);
});

it('replaces a redacted output and marks it, without adding an event', () => {
  const { trace } = traceWithResult({ answer: 'mail ann@example.com' });
  trace.addDrafts([{ type: 'tool_output_guarded', data: { commandId: 'c4', output: { answer: 'mail [REDACTED]' }, blocked: false } }]);
  expect(trace.events).toHaveLength(2);
  expect(trace.events[1]!.data).toEqual({ tool: 'lookup', success: true, output: { answer: 'mail [REDACTED]' }, outputRedacted: true });
  expect(JSON.stringify(trace.events)).not.toContain('ann@example.com');
});

it('withholds a blocked output', () => {
  const { trace } = traceWithResult({ answer: 'INTERNAL only' });
  trace.addDrafts([{ type: 'tool_output_guarded', data: { commandId: 'c4', output: null, blocked: true } }]);
  expect(trace.events[1]!.data).toEqual({ tool: 'lookup', success: true, outputWithheld: 'blocked by a tool_output guardrail' });
});

it('ignores a rewrite for a command it holds no result of', () => {
  const { trace } = traceWithResult({ answer: 'a' });
  trace.addDrafts([{ type: 'tool_output_guarded', data: { commandId: 'c9', output: null, blocked: true } }]);
  expect(trace.events[1]!.data).toEqual({ tool: 'lookup', success: true, output: { answer: 'a' } });
  expect(trace.events).toHaveLength(2);
});

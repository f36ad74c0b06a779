// The HTTP-async delivery bodies and retry waits, built in the conversation workflow.
import { llmProvenance, responseBody, retryDelayMs, statusBody } from '../../../workflows/http-async-bodies';

const conv = { sessionKey: 'http_async:p:whs-s:k', sessionId: 'sess-1' };
const noLlm = { generated: false, usedInternally: false, usedFallback: false };

it('gives agent.response every field of the spec, metadata unchanged, no intent or conv_status', () => {
  const body = responseBody(conv, { messageId: 'ham-1', response: 'Hi', isNewSession: true, metadata: { a: { b: [1] } }, llm: noLlm });
  expect(body).toEqual({
    event: 'agent.response',
    message_id: 'ham-1',
    session_key: conv.sessionKey,
    response: 'Hi',
    channel_output: { kind: 'text', text: 'Hi' },
    outcome: { status: 'ok', usedFallback: false },
    trace_context: { session_id: 'sess-1', delivery: 'correlation_only' },
    session_id: 'sess-1',
    is_new_session: true,
    response_metadata: { isLlmGenerated: false, responseProvenance: { schemaVersion: 1, kind: 'agent_authored', disclaimerRequired: false, usedLlmInternally: false } },
    metadata: { a: { b: [1] } },
    timestamp: expect.any(String),
  });
  const failed = responseBody(conv, { messageId: 'ham-2', response: '', isNewSession: false, metadata: {}, llm: noLlm, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent session limit exceeded' } });
  expect(failed.outcome).toEqual({ status: 'error', usedFallback: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent session limit exceeded' } });
  expect(statusBody(conv, { messageId: 'has-1', status: 'suspended', relatedMessageId: 'ham-1', details: { tool: 't' } })).toMatchObject({ event: 'agent.status', status: 'suspended', related_message_id: 'ham-1', details: { tool: 't' } });
});

it('says a reply was written by a model only when a reasoning or routing call made it', () => {
  expect(llmProvenance([])).toEqual(noLlm);
  expect(llmProvenance([{ type: 'llm_call', data: { purpose: 'extraction' } }])).toEqual({ generated: false, usedInternally: true, usedFallback: false });
  expect(llmProvenance([{ type: 'llm_call', data: { purpose: 'reasoning', fallbackFrom: 'm1' } }])).toEqual({ generated: true, usedInternally: true, usedFallback: true });
});

it('doubles the wait up to the cap, with at most half of it taken off at random', () => {
  const schedule = { initialIntervalMs: 1000, maxIntervalMs: 3_600_000 };
  expect([1, 2, 3, 4].map((n) => retryDelayMs(n, schedule, () => 1))).toEqual([1000, 2000, 4000, 8000]);
  expect([1, 2, 3].map((n) => retryDelayMs(n, schedule, () => 0))).toEqual([500, 1000, 2000]);
  expect(retryDelayMs(30, schedule, () => 1)).toBe(3_600_000);
  // Huge attempt counts do not overflow into Infinity or NaN.
  expect(retryDelayMs(10_000, schedule, () => 0.5)).toBe(2_700_000);
});

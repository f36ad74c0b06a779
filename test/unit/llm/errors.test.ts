// ProviderError classification details that the adapter tests do not reach.
import { APIError as OpenAIAPIError } from 'openai';
import { parseRetryAfter, ProviderError, toProviderError } from '../../../providers/llm/errors';

describe('parseRetryAfter', () => {
  it('reads seconds, an HTTP date and retry-after-ms', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '1.5' }))).toBe(1500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }), now)).toBe(30_000);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(new Headers())).toBeUndefined();
  });
});

describe('toProviderError', () => {
  const apiError = (status: number, body: object, headers: Record<string, string> = {}): OpenAIAPIError =>
    OpenAIAPIError.generate(status, body, undefined, new Headers(headers));

  it.each([
    [400, 'bad_request', false],
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'not_found', false],
    [408, 'timeout', true],
    [422, 'bad_request', false],
    [429, 'rate_limited', true],
    [500, 'unknown', true],
    [502, 'unknown', true],
    [503, 'overloaded', true],
    [504, 'timeout', true],
  ] as const)('HTTP %i is %s (retryable: %s)', (status, kind, retryable) => {
    const err = toProviderError(apiError(status, { error: { message: 'x' } }), 'openai');
    expect(err).toMatchObject({ kind, retryable, status, provider: 'openai' });
  });

  it('classifies content-policy rejections by code, whatever the status', () => {
    const err = toProviderError(apiError(400, { error: { message: 'no', code: 'content_filter' } }), 'openai');
    expect(err).toMatchObject({ kind: 'content_policy', retryable: false, code: 'content_filter' });
  });

  it('lets a fired caller signal win, and a fired deadline be a timeout', () => {
    const controller = new AbortController();
    controller.abort();
    expect(toProviderError(new Error('whatever'), 'x', { signal: controller.signal }).kind).toBe('aborted');
    expect(toProviderError(new Error('whatever'), 'x', { timedOut: true })).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('treats a dropped socket as a retryable network error and anything else as unknown, not retryable', () => {
    const dropped = Object.assign(new TypeError('terminated'), { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
    expect(toProviderError(dropped, 'x')).toMatchObject({ kind: 'network', retryable: true });
    expect(toProviderError(new RangeError('bug'), 'x')).toMatchObject({ kind: 'unknown', retryable: false });
  });

  it('passes a ProviderError through unchanged', () => {
    const original = new ProviderError('x', { kind: 'auth', provider: 'p', retryable: false });
    expect(toProviderError(original, 'other')).toBe(original);
  });
});

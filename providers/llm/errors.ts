// One error type for every LLM failure, classified so Temporal activities can decide to
// retry (ApplicationFailure type/nonRetryable/nextRetryDelay) without knowing which SDK failed.
import {
  APIConnectionError as AnthropicConnectionError,
  APIConnectionTimeoutError as AnthropicConnectionTimeoutError,
  APIError as AnthropicAPIError,
  APIUserAbortError as AnthropicUserAbortError,
} from '@anthropic-ai/sdk/error';
import {
  APIConnectionError as OpenAIConnectionError,
  APIConnectionTimeoutError as OpenAIConnectionTimeoutError,
  APIError as OpenAIAPIError,
  APIUserAbortError as OpenAIUserAbortError,
} from 'openai/error';
import { blockedDestinationOf, DESTINATION_BLOCKED } from '../../lib/net/destination';

export const PROVIDER_ERROR_KINDS = [
  'auth',
  'bad_request',
  'not_found',
  'rate_limited',
  'overloaded',
  'timeout',
  'network',
  'content_policy',
  'aborted',
  'unknown',
] as const;
export type ProviderErrorKind = (typeof PROVIDER_ERROR_KINDS)[number];

export interface ProviderErrorOptions {
  kind: ProviderErrorKind;
  provider: string;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
  /** The provider's own error code or type, e.g. `rate_limit_exceeded`, `overloaded_error`. */
  code?: string;
  cause?: unknown;
}

export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly kind: ProviderErrorKind;
  readonly provider: string;
  readonly retryable: boolean;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly code?: string;

  constructor(message: string, options: ProviderErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options.kind;
    this.provider = options.provider;
    this.retryable = options.retryable;
    if (options.status !== undefined) this.status = options.status;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.code !== undefined) this.code = options.code;
  }
}

/** Is this already classified? */
export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}

/**
 * Milliseconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date.
 * `now` is injectable for tests.
 */
export function parseRetryAfter(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const raw = headers.get('retry-after');
  if (raw === null || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

const CONTENT_POLICY_PATTERN = /content[_ ]?(policy|filter|management)|safety/i;

/** Classify by HTTP status (and the provider's error code, for content-policy rejections). */
export function classifyStatus(status: number, code: string | undefined): { kind: ProviderErrorKind; retryable: boolean } {
  if (code !== undefined && CONTENT_POLICY_PATTERN.test(code)) return { kind: 'content_policy', retryable: false };
  if (status === 401 || status === 402 || status === 403) return { kind: 'auth', retryable: false };
  if (status === 404) return { kind: 'not_found', retryable: false };
  if (status === 408) return { kind: 'timeout', retryable: true };
  if (status === 429) return { kind: 'rate_limited', retryable: true };
  if (status === 503 || status === 529) return { kind: 'overloaded', retryable: true };
  if (status === 504) return { kind: 'timeout', retryable: true };
  if (status >= 500) return { kind: 'unknown', retryable: true };
  if (status >= 400) return { kind: 'bad_request', retryable: false };
  return { kind: 'unknown', retryable: false };
}

function errorCodeOf(err: OpenAIAPIError | AnthropicAPIError): string | undefined {
  if (err instanceof OpenAIAPIError) {
    return err.code ?? err.type ?? undefined;
  }
  return err.errorCode ?? err.type ?? undefined;
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
}

/** Duck-typed, because errors from Node's fetch may come from another realm (e.g. under jest). */
function asErrorLike(err: unknown): ErrorLike | undefined {
  return typeof err === 'object' && err !== null ? (err as ErrorLike) : undefined;
}

function messageOf(err: unknown): string {
  const like = asErrorLike(err);
  return typeof like?.message === 'string' ? like.message : String(err);
}

/** Looks through `cause` chains for signs of a dropped connection (undici's "terminated"). */
function looksLikeNetworkFailure(err: unknown, depth = 0): boolean {
  const like = asErrorLike(err);
  if (depth > 5 || !like) return false;
  if (typeof like.code === 'string' && NETWORK_CODES.has(like.code)) return true;
  const message = typeof like.message === 'string' ? like.message : '';
  if (like.name === 'TypeError' && /terminated|fetch failed|socket/i.test(message)) return true;
  if (/premature close|socket hang up|other side closed/i.test(message)) return true;
  return looksLikeNetworkFailure(like.cause, depth + 1);
}

function isAbortError(err: unknown): boolean {
  const name = asErrorLike(err)?.name;
  return name === 'AbortError' || name === 'APIUserAbortError';
}

export interface ClassifyContext {
  /** The caller's signal: an abort it caused is `aborted`, whatever the SDK threw. */
  signal?: AbortSignal;
  /** True when our own deadline fired: the failure is a `timeout`. */
  timedOut?: boolean;
}

/**
 * Maps anything an SDK call (or a stream iteration) threw onto a ProviderError.
 * Pass the caller's signal and whether our deadline fired, so aborts and timeouts are classified
 * by what happened rather than by which error class an SDK chose.
 */
export function toProviderError(err: unknown, provider: string, context: ClassifyContext = {}): ProviderError {
  if (err instanceof ProviderError) return err;
  const message = messageOf(err);
  const { signal } = context;

  if (context.timedOut === true) {
    return new ProviderError(`${provider}: request timed out`, { kind: 'timeout', provider, retryable: true, cause: err });
  }

  if (
    err instanceof OpenAIUserAbortError ||
    err instanceof AnthropicUserAbortError ||
    isAbortError(err) ||
    signal?.aborted === true
  ) {
    return new ProviderError(`${provider}: request aborted`, { kind: 'aborted', provider, retryable: false, cause: err });
  }
  const blocked = blockedDestinationOf(err);
  if (blocked) {
    // The project's base URL points at a refused address: the caller's configuration, not an outage.
    return new ProviderError(`${provider}: ${blocked.message}; the base URL must be a public address`, {
      kind: 'bad_request',
      provider,
      retryable: false,
      code: DESTINATION_BLOCKED,
      cause: err,
    });
  }
  if (err instanceof OpenAIConnectionTimeoutError || err instanceof AnthropicConnectionTimeoutError) {
    return new ProviderError(`${provider}: request timed out`, { kind: 'timeout', provider, retryable: true, cause: err });
  }
  if (err instanceof OpenAIConnectionError || err instanceof AnthropicConnectionError) {
    return new ProviderError(`${provider}: connection failed: ${message}`, {
      kind: 'network',
      provider,
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof OpenAIAPIError || err instanceof AnthropicAPIError) {
    const code = errorCodeOf(err);
    const status = err.status;
    if (status === undefined) {
      // An APIError without a status is an error event inside an SSE stream (e.g. Anthropic's
      // `event: error` with `overloaded_error`): classify by the error type it carries.
      const byType = classifyStreamErrorType(code);
      return new ProviderError(`${provider}: ${message}`, {
        ...byType,
        provider,
        ...(code !== undefined ? { code } : {}),
        cause: err,
      });
    }
    const { kind, retryable } = classifyStatus(status, code);
    const retryAfterMs = kind === 'rate_limited' || kind === 'overloaded' ? parseRetryAfter(err.headers) : undefined;
    return new ProviderError(`${provider}: ${message}`, {
      kind,
      provider,
      retryable,
      status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      ...(code !== undefined ? { code } : {}),
      cause: err,
    });
  }
  if (looksLikeNetworkFailure(err)) {
    return new ProviderError(`${provider}: connection lost: ${message}`, {
      kind: 'network',
      provider,
      retryable: true,
      cause: err,
    });
  }
  return new ProviderError(`${provider}: ${message}`, { kind: 'unknown', provider, retryable: false, cause: err });
}

/** Error types carried inside a stream's error event (both SDKs use these names). */
function classifyStreamErrorType(type: string | undefined): { kind: ProviderErrorKind; retryable: boolean } {
  switch (type) {
    case 'overloaded_error':
      return { kind: 'overloaded', retryable: true };
    case 'rate_limit_error':
    case 'rate_limit_exceeded':
      return { kind: 'rate_limited', retryable: true };
    case 'api_error':
    case 'server_error':
      return { kind: 'unknown', retryable: true };
    case 'timeout_error':
      return { kind: 'timeout', retryable: true };
    case 'authentication_error':
    case 'permission_error':
      return { kind: 'auth', retryable: false };
    case 'not_found_error':
      return { kind: 'not_found', retryable: false };
    case 'invalid_request_error':
      return { kind: 'bad_request', retryable: false };
    default:
      if (type !== undefined && CONTENT_POLICY_PATTERN.test(type)) return { kind: 'content_policy', retryable: false };
      return { kind: 'unknown', retryable: false };
  }
}

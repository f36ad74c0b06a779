// The error family. DomainError is what a domain operation (core/, db/, lib/) refuses with: a
// code from lib/error-codes.ts and a message for the caller, nothing of HTTP. ApiError is the
// HTTP edge's: it adds response headers and top-level body fields. The API's error middleware
// answers either as `{ success: false, error: { code, message } }` with the status of its code.
import { type ErrorCode } from './error-codes';

export interface DomainErrorOptions {
  /** Message sent to the client. Never include secrets or internals. */
  message: string;
  /** Extra machine-readable fields merged into the error object (e.g. `details`). */
  details?: Record<string, unknown>;
  /** When to try again (a limit was reached); the API sends it as `retryAfterMs` and `Retry-After`. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly retryAfterMs?: number;

  constructor(code: ErrorCode, options: DomainErrorOptions | string) {
    const opts = typeof options === 'string' ? { message: options } : options;
    super(opts.message, { cause: opts.cause });
    this.name = 'DomainError';
    this.code = code;
    this.details = opts.details;
    this.retryAfterMs = opts.retryAfterMs;
  }

  static notFound(what = 'Resource'): DomainError {
    return new DomainError('NOT_FOUND', `${what} not found`);
  }
}

export interface ApiErrorOptions extends Omit<DomainErrorOptions, 'retryAfterMs'> {
  /** Fields added at the top level of the body (the spec puts `retryAfterMs` there). */
  extraBody?: Record<string, unknown>;
  /** Response headers to set (e.g. `Retry-After`). */
  headers?: Record<string, string>;
}

export class ApiError extends DomainError {
  /** Keeps the types apart: a DomainError is not an ApiError until the edge maps it (fromDomain). */
  private readonly httpEdge = true;
  readonly extraBody?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, options: ApiErrorOptions | string) {
    const opts = typeof options === 'string' ? { message: options } : options;
    super(code, { message: opts.message, details: opts.details, cause: opts.cause });
    this.name = 'ApiError';
    this.extraBody = opts.extraBody;
    this.headers = opts.headers;
  }

  static override notFound(what = 'Resource'): ApiError {
    return new ApiError('NOT_FOUND', `${what} not found`);
  }

  /** The HTTP answer to a domain refusal: its code and message; a retry delay becomes `retryAfterMs` and `Retry-After` (seconds). */
  static fromDomain(err: DomainError): ApiError {
    if (isApiError(err)) return err;
    const retry = err.retryAfterMs;
    return new ApiError(err.code, {
      message: err.message,
      details: err.details,
      cause: err.cause,
      ...(retry !== undefined ? { extraBody: { retryAfterMs: retry }, headers: { 'Retry-After': String(Math.ceil(retry / 1000)) } } : {}),
    });
  }
}

/**
 * `Retry-After` of a 503 for a dependency that did not answer in time or at all (Temporal, the
 * store, a turn that outlived its wait): the request is safe to send again, with the same
 * Idempotency-Key where it had one. A 503 for something not configured carries none.
 */
export const RETRY_LATER_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'Retry-After': '1' });

/** Realm-safe check (jest runs modules in separate registries, where instanceof can lie). */
export function isApiError(err: unknown): err is ApiError {
  return err instanceof Error && err.name === 'ApiError' && typeof (err as ApiError).code === 'string';
}

/** A DomainError or an ApiError (realm-safe, as isApiError). */
export function isDomainError(err: unknown): err is DomainError {
  return err instanceof Error && (err.name === 'DomainError' || err.name === 'ApiError') && typeof (err as DomainError).code === 'string';
}

// The one error family of the API. Thrown anywhere on the request path; the error middleware
// turns it into `{ success: false, error: { code, message } }` with the status of its code.
import { type ErrorCode } from './error-codes';

export interface ApiErrorOptions {
  /** Message sent to the client. Never include secrets or internals. */
  message: string;
  /** Extra machine-readable fields merged into the error object (e.g. `details`). */
  details?: Record<string, unknown>;
  /** Fields added at the top level of the body (the spec puts `retryAfterMs` there). */
  extraBody?: Record<string, unknown>;
  /** Response headers to set (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly extraBody?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, options: ApiErrorOptions | string) {
    const opts = typeof options === 'string' ? { message: options } : options;
    super(opts.message, { cause: opts.cause });
    this.name = 'ApiError';
    this.code = code;
    this.details = opts.details;
    this.extraBody = opts.extraBody;
    this.headers = opts.headers;
  }

  static notFound(what = 'Resource'): ApiError {
    return new ApiError('NOT_FOUND', `${what} not found`);
  }
}

/** Realm-safe check (jest runs modules in separate registries, where instanceof can lie). */
export function isApiError(err: unknown): err is ApiError {
  return err instanceof Error && err.name === 'ApiError' && typeof (err as ApiError).code === 'string';
}

// The closed set of error codes and the one table that maps each to an HTTP status.
// Workflows and activities throw ApplicationFailure with `type` set to one of these codes,
// and the API maps it back through the same table.

export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  /** An HTTP-async follow-up sent with the caller's own key instead of the canonical one (docs/http-async.md). */
  SESSION_KEY_NOT_CANONICAL: 400,
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  /** An HTTP-async message for a paused webhook subscription (docs/http-async.md). */
  SUBSCRIPTION_PAUSED: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE_ENTITY: 422,
  RATE_LIMIT_EXCEEDED: 429,
  QUEUE_FULL: 429,
  /** A scope holds as many platform keys as it may (docs/public-api.md). */
  KEY_LIMIT_REACHED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value);
}

export function statusForCode(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

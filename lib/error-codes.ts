// The closed set of error codes and the one table that maps each to an HTTP status.
// Workflows and activities throw ApplicationFailure with `type` set to one of these codes,
// and the API maps it back through the same table.

export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  /** An HTTP-async follow-up sent with the caller's own key instead of the canonical one (docs/http-async.md). */
  SESSION_KEY_NOT_CANONICAL: 400,
  VALIDATION_ERROR: 400,
  /** A destination that is not an E.164 number (outbound calls, channel connections). */
  INVALID_PHONE_NUMBER: 400,
  /** A SIP URI carrying headers, parameters or characters that could inject into the SIP request. */
  SIP_INJECTION_REJECTED: 400,
  /** Session analytics: a `containmentType`, `environment` or `status` filter value outside the spec's set (docs/session-analytics.md). */
  INVALID_CONTAINMENT_TYPE: 400,
  INVALID_ENVIRONMENT: 400,
  INVALID_STATUS: 400,
  /** Session analytics: the key has request encryption on and the body was sent in clear. */
  ENCRYPTION_REQUIRED: 400,
  UNAUTHORIZED: 401,
  /** A recording media token that is invalid, expired or does not match the request (docs/telephony.md). */
  INVALID_RECORDING_MEDIA_TOKEN: 401,
  FORBIDDEN: 403,
  /** The recordings list takes a platform key only (docs/telephony.md). */
  PLATFORM_API_KEY_REQUIRED: 403,
  /** The key lacks the scope the operation needs; `required` names it (docs/telephony.md). */
  PERMISSION_REQUIRED: 403,
  NOT_FOUND: 404,
  /** A channel connection or outbound call that does not exist or belongs to another project (concealed alike). */
  CHANNEL_NOT_FOUND: 404,
  PROJECT_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  RECORDING_NOT_FOUND: 404,
  RECORDING_MEDIA_NOT_FOUND: 404,
  /** A contact that does not exist, was deleted, or belongs to another tenant (docs/contacts.md). */
  CONTACT_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  /** An agent-assist hook event the conversation's lifecycle does not accept now; `details.expected` names what it would (docs/agent-assist.md). */
  AGENT_ASSIST_EVENT_OUT_OF_ORDER: 409,
  /** An idempotency key reused with a different body (outbound calls). */
  IDEMPOTENCY_CONFLICT: 409,
  /** A recording whose media is not stored yet. */
  RECORDING_NOT_READY: 409,
  /** An HTTP-async message for a paused webhook subscription (docs/http-async.md). */
  SUBSCRIPTION_PAUSED: 409,
  /** A live contact of the tenant already has this identity and identityType (docs/contacts.md). */
  CONTACT_IDENTITY_CONFLICT: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  /** A session with more recordings, or a recording with more files, than one answer lists. */
  RECORDING_QUERY_LIMIT_EXCEEDED: 413,
  RECORDING_OBJECT_LIMIT_EXCEEDED: 413,
  /** A memory store's content over its size limit, or a session already holding as many stores as it may (docs/memory.md). */
  MEMORY_STORE_CONTENT_TOO_LARGE: 413,
  MEMORY_STORE_LIMIT_REACHED: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** A byte range outside a recording file (Content-Range names the file's size). */
  RANGE_NOT_SATISFIABLE: 416,
  UNPROCESSABLE_ENTITY: 422,
  /** Session analytics: a well-formed JWE body that is not to the project's key, uses other algorithms, or does not decrypt to a JSON object. */
  INVALID_ENCRYPTED_BODY: 422,
  RATE_LIMIT_EXCEEDED: 429,
  QUEUE_FULL: 429,
  /** A scope holds as many platform keys as it may (docs/public-api.md). */
  KEY_LIMIT_REACHED: 429,
  /** A project holds as many voice channel connections as it may (CHANNEL_CONNECTIONS_MAX_PER_PROJECT). */
  CHANNEL_CONNECTION_LIMIT_REACHED: 429,
  INTERNAL_ERROR: 500,
  /** Twilio refused the call or could not be reached before it took it; retrying is safe. */
  OUTBOUND_PROVIDER_SUBMIT_FAILED: 502,
  /** The platform has no public webhook URL Twilio could call back (PUBLIC_BASE_URL). */
  OUTBOUND_WEBHOOK_NOT_CONFIGURED: 502,
  /** Whether Twilio took the call is unknown; the platform reconciles it, do not resubmit. */
  OUTBOUND_PROVIDER_REQUEST_UNKNOWN: 502,
  SERVICE_UNAVAILABLE: 503,
  RECORDING_SETTINGS_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value);
}

export function statusForCode(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

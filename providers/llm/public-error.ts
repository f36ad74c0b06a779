// What callers may be told about a provider failure, and what only the logs get. A provider's
// own error text can echo keys, prompts, account details or internal host names, so callers get
// a fixed description of the failure's kind; the text goes to logs with the provider's request id.
import { DESTINATION_BLOCKED } from '../../lib/net/destination';
import { type ProviderError, type ProviderErrorKind } from './errors';

const WHAT_HAPPENED: Partial<Record<ProviderErrorKind, string>> = {
  auth: 'refused the credentials',
  bad_request: 'rejected the request as invalid',
  not_found: 'does not know the model or endpoint',
  rate_limited: 'is rate-limiting requests',
  overloaded: 'is overloaded',
  timeout: 'did not answer in time',
  network: 'could not be reached',
  content_policy: 'refused the content under its content policy',
  aborted: 'call was cancelled',
  unknown: 'failed',
};

/**
 * A caller-safe message: the provider's name, what kind of failure, and the HTTP status. `role`
 * names what the provider was asked to be (`moderation provider` for provider guardrails).
 */
export function publicProviderMessage(err: ProviderError, role = 'LLM provider'): string {
  // The project's own base URL was refused before any request left: say so, it is theirs to fix.
  if (err.code === DESTINATION_BLOCKED) {
    return `The ${role} ${err.provider} was not called: its base URL points at a private, loopback or other non-public address, and non-public addresses are refused (docs/llm-settings.md)`;
  }
  const status = err.status !== undefined ? ` (HTTP ${err.status})` : '';
  return `The ${role} ${err.provider} ${WHAT_HAPPENED[err.kind] ?? 'failed'}${status}`;
}

/** The provider's request id (OpenAI `x-request-id`, Anthropic `request-id`), from the SDK error. */
function providerRequestId(err: unknown): string | undefined {
  for (let current = err, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const id = (current as { requestID?: unknown }).requestID;
    if (typeof id === 'string' && id !== '') return id;
  }
  return undefined;
}

/** Log fields for a provider failure: everything the caller is not told, for whoever runs the service. */
export function providerErrorLogFields(err: ProviderError): Record<string, unknown> {
  const requestId = providerRequestId(err);
  return {
    provider: err.provider,
    kind: err.kind,
    retryable: err.retryable,
    ...(err.status !== undefined ? { status: err.status } : {}),
    ...(err.code !== undefined ? { providerCode: err.code } : {}),
    ...(requestId ? { providerRequestId: requestId } : {}),
    providerMessage: err.message,
  };
}

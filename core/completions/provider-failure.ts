// A provider's failure as the caller sees it: a caller-safe message and the code of its kind
// (429 with the provider's retry delay, 504, 503, 400), or the `error` event that ends a stream;
// its detail goes to the log only.
import { ApiError } from '../../lib/errors';
import { ProviderError } from '../../providers/llm';
import { providerErrorLogFields, publicProviderMessage } from '../../providers/llm/public-error';
import { type CoreContext } from '../context';

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}

/**
 * Logs a provider failure's detail (the provider's own text, its request id) with this request's
 * id: the caller is told only what publicProviderMessage says.
 */
export function logProviderFailure(ctx: CoreContext, requestId: unknown, err: ProviderError): void {
  ctx.logger.warn({ requestId, ...providerErrorLogFields(err) }, 'LLM provider call failed');
}

/** A provider failure on the streamed path: the data of the stream's last `error` event. */
export function providerFailureEvent(err: ProviderError): { error: string; code: string; retryable: boolean } {
  return { error: publicProviderMessage(err), code: `LLM_${err.kind.toUpperCase()}`, retryable: err.retryable };
}

/** A provider failure on the non-streamed path, as an API error with a caller-safe message. */
export function providerFailure(err: ProviderError): ApiError {
  const message = publicProviderMessage(err);
  switch (err.kind) {
    case 'bad_request':
    case 'not_found':
    case 'content_policy':
      return new ApiError('BAD_REQUEST', message);
    case 'rate_limited': {
      const retryAfterMs = Math.max(1, err.retryAfterMs ?? 1000);
      return new ApiError('RATE_LIMIT_EXCEEDED', {
        message,
        extraBody: { retryAfterMs },
        headers: { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) },
      });
    }
    case 'timeout':
      return new ApiError('GATEWAY_TIMEOUT', message);
    case 'auth':
    case 'overloaded':
    case 'network':
    case 'aborted':
    case 'unknown':
      return new ApiError('SERVICE_UNAVAILABLE', message);
    default: {
      const unreachable: never = err.kind;
      return new ApiError('SERVICE_UNAVAILABLE', `${message} (${String(unreachable)})`);
    }
  }
}

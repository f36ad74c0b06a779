// While an API key's stream runs, its key is checked again, so a revocation ends the stream.
import { type Request } from 'express';
import { type Principal } from '../../lib/permissions';
import { type AppContext } from '../context';
import { apiKeyRefusal } from '../middleware/auth';

/**
 * Revocation ends ongoing requests too (public API: "revocation is permanent and immediate, and
 * ongoing requests with the key fail"): while an API key's stream runs, its key is checked every
 * half API_KEY_CACHE_MS (every SSE_HEARTBEAT_MS when that is shorter, or when keys are read on
 * every request), through the same per-process knowledge as requests, so a thousand streams of
 * one key cost no more reads than one. Once the key is revoked, expired or gone, the upstream
 * call is aborted and the stream ends with an `error` event (code UNAUTHORIZED): `onRefused`.
 */
export function watchKeyWhileStreaming(ctx: AppContext, principal: Principal, req: Request, onRefused: (refusal: string) => void) {
  const { API_KEY_CACHE_MS: cacheMs, SSE_HEARTBEAT_MS: heartbeatMs } = ctx.config;
  const every = cacheMs > 0 ? Math.min(heartbeatMs, Math.max(1, Math.floor(cacheMs / 2))) : heartbeatMs;
  const timer =
    principal.kind === 'api_key'
      ? setInterval(() => {
          void apiKeyRefusal(ctx, req).then((refusal) => {
            if (refusal) onRefused(refusal);
          });
        }, every)
      : null;
  return {
    stop: () => {
      if (timer) clearInterval(timer);
    },
  };
}

// What the app needs from its process: configuration, models, Temporal, logger. Built once
// in server.ts (or by the test harness) and handed to createApp.
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';
import { type TemporalGateway } from '../core/temporal';
import { type CoreContext } from '../core/context';
import { type AesGcmPayloadCodec } from '../lib/payload-codec';
import { type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type Tracing } from '../lib/tracing';

export interface AppContext extends CoreContext {
  config: Config;
  models: Models;
  temporal: TemporalGateway;
  /** Encrypts Temporal payloads (null: none configured, payloads in clear); also serves /codec/*. */
  payloadCodec: AesGcmPayloadCodec | null;
  logger: Logger;
  rateLimiter: RateLimiterAbstract;
  /** Failed logins per client address and email (api/auth/login-throttle.ts). */
  loginLimiter: RateLimiterAbstract;
  /** Failed logins per client address, whatever the email. */
  loginIpLimiter: RateLimiterAbstract;
  /** Messages per session per minute (SESSION_MESSAGES_PER_MINUTE). */
  sessionMessageLimiter: RateLimiterAbstract;
  /** OpenTelemetry tracing (lib/tracing.ts); null or absent: off, nothing installed. */
  tracing?: Tracing | null;
}

// Assembles an AppContext from configuration: Mongo connection and models, the Temporal
// gateway, the logger and the rate limiters. Shared by server.ts and the test harness.
import { type Config } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import { temporalConnectionSettings } from '../lib/temporal-options';
import { payloadCodecForProcess, switchboardDataConverter } from '../lib/payload-codec';
import { connectMongo } from '../db/connection';
import { createModels, syncIndexes } from '../db/models';
import { type AppContext } from './context';
import { createRateLimiter, ensureRateLimitIndexes, writeBatchedCharges } from './middleware/rate-limit';
import { TemporalGateway } from '../core/temporal';
import { flushHeldAnalyticsEvents } from '../core/analytics/batcher';
import { startTracing } from '../lib/tracing';

export async function buildAppContext(config: Config, logger: Logger = createLogger({ level: config.LOG_LEVEL, name: 'api' })): Promise<AppContext> {
  // First: in production a missing codec key stops the start before anything connects.
  const payloadCodec = payloadCodecForProcess(config, logger);
  // Before the Temporal client, whose interceptors carry each request's trace into the workflows.
  const tracing = startTracing(config, 'api', logger);
  const connection = await connectMongo(config.MONGODB_URI, { serverSelectionTimeoutMs: config.MONGODB_SERVER_SELECTION_TIMEOUT_MS });
  const models = createModels(connection);
  await syncIndexes(models);
  const temporal = new TemporalGateway(temporalConnectionSettings(config), config.TEMPORAL_NAMESPACE, config.TEMPORAL_TASK_QUEUE, switchboardDataConverter(payloadCodec), tracing?.clientInterceptors());
  if (config.RATE_LIMIT_STORE === 'mongo') await ensureRateLimitIndexes(connection);
  const rateLimiter = createRateLimiter({
    store: config.RATE_LIMIT_STORE,
    points: config.RATE_LIMIT_REQUESTS,
    durationSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
    keyPrefix: 'rl',
    connection,
  });
  const loginLimiter = createRateLimiter({
    store: config.RATE_LIMIT_STORE,
    points: config.LOGIN_FAILURES_PER_IP_EMAIL,
    durationSeconds: config.LOGIN_WINDOW_SECONDS,
    keyPrefix: 'login',
    connection,
  });
  const loginIpLimiter = createRateLimiter({
    store: config.RATE_LIMIT_STORE,
    points: config.LOGIN_FAILURES_PER_IP,
    durationSeconds: config.LOGIN_WINDOW_SECONDS,
    keyPrefix: 'login-ip',
    connection,
  });
  const sessionMessageLimiter = createRateLimiter({
    store: config.RATE_LIMIT_STORE,
    points: config.SESSION_MESSAGES_PER_MINUTE,
    durationSeconds: 60,
    keyPrefix: 'session-msg',
    connection,
  });
  return { config, models, temporal, payloadCodec, logger, rateLimiter, loginLimiter, loginIpLimiter, sessionMessageLimiter, tracing };
}

export async function closeAppContext(ctx: AppContext): Promise<void> {
  // Charges admitted without waiting are written before the connection goes.
  await writeBatchedCharges();
  await flushHeldAnalyticsEvents(ctx.models);
  await ctx.temporal.close();
  await ctx.models.connection.close();
  await ctx.tracing?.shutdown();
}

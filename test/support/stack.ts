// Per-test-file stack: the real API app on a free port against the shared Temporal and FerretDB
// (its own database, so files never see each other's data), and optionally an in-process worker
// on its own task queue.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import type { DefaultLogger, NativeConnection, Runtime, Worker, WorkerOptions } from '@temporalio/worker';
import { createApp } from '../../api/app';
import { buildAppContext, closeAppContext } from '../../api/bootstrap';
import { type AppContext } from '../../api/context';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger, type Logger } from '../../lib/logger';
import { createApiKey, createProject, createTenant, createUser } from '../../core/tenancy/accounts';
import { type Permission } from '../../lib/permissions';
import { type SessionBundleStore } from '../../activities/persistence/session-bundles';

let runtimeInstalled = false;
// The worker's modules (the Temporal worker SDK, every activity) load only in files that start a worker.
function installRuntime(runtime: typeof Runtime, Logger: typeof DefaultLogger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    runtime.install({ logger: new Logger('WARN'), shutdownSignals: [] });
  } catch {
    // Already installed in this module registry.
  }
}

export interface TestStackOptions {
  env?: Record<string, string>;
  worker?: boolean;
  /** Override the Mongo URI (a dedicated FerretDB, e.g. for readiness tests). */
  mongoUri?: string;
  /**
   * The test's own servers on loopback (URLs) that HTTP tools, project LLM base URLs, HTTP-async
   * callback URLs or app-run callback URLs may reach.
   * The destination rules stay on for everything else, as in production.
   */
  allowPrivate?: { tools?: string[]; llm?: string[]; httpAsync?: string[]; appRunCallbacks?: string[] };
  /** The API's and the worker's logger (e.g. one that records lines for a test to read). */
  logger?: Logger;
  /** Interceptors of the in-process worker (e.g. one that holds an activity for a test to act meanwhile). */
  workerInterceptors?: WorkerOptions['interceptors'];
  /** Where the in-process worker reaches Temporal when not where the API does (e.g. the API behind a proxy a test cuts). */
  workerTemporalAddress?: string;
  /** false: a deployment without real-time voice (no LIVEKIT_URL), though the tests' shared LiveKit server runs. */
  liveKit?: false;
  /** The driver's command monitoring on the stack's own connection (a test counts what the API sends to the store). */
  monitorCommands?: boolean;
}

export interface TestStack {
  baseUrl: string;
  ctx: AppContext;
  config: Config;
  worker: Worker | null;
  /** The in-process worker's session bundle store (its caches), or null without a worker. */
  sessionBundles: SessionBundleStore | null;
  close(): Promise<void>;
}

export function testConfig(overrides: Record<string, string> = {}, mongoUri?: string): Config {
  const base = (mongoUri ?? process.env.SB_TEST_MONGODB_URI!).replace(/\/$/, '');
  const dbName = `t_${randomBytes(5).toString('hex')}`;
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    PORT: '0',
    MONGODB_URI: `${base}/${dbName}`,
    TEMPORAL_ADDRESS: process.env.SB_TEST_TEMPORAL_ADDRESS!,
    TEMPORAL_TASK_QUEUE: `tq-${dbName}`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    PLATFORM_ADMIN_TOKEN: randomBytes(24).toString('hex'),
    RATE_LIMIT_REQUESTS: '10000',
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
    // Bounds how long a test's worker waits for its activities in flight when the test ends.
    SHUTDOWN_GRACE_MS: '2000',
    // Worker processes a test starts load the workflow bundle the global setup built instead of
    // bundling again (seconds of CPU each on a 2-core box).
    ...(process.env.SB_TEST_WORKFLOW_BUNDLE ? { WORKFLOW_BUNDLE_PATH: process.env.SB_TEST_WORKFLOW_BUNDLE } : {}),
    // The shared LiveKit server: voice rooms of every file live there, named by their session ids.
    ...(process.env.SB_TEST_LIVEKIT_URL
      ? { LIVEKIT_URL: process.env.SB_TEST_LIVEKIT_URL, LIVEKIT_API_KEY: process.env.SB_TEST_LIVEKIT_API_KEY!, LIVEKIT_API_SECRET: process.env.SB_TEST_LIVEKIT_API_SECRET! }
      : {}),
    ...overrides,
  });
}

/** `host:port` of each URL, as TOOL_/LLM_ALLOWED_PRIVATE_DESTINATIONS list them. */
export function destinationList(urls: string[] = []): string {
  return urls
    .map((u) => new URL(u))
    .map((u) => `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`)
    .join(',');
}

export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const allow = options.allowPrivate ?? {};
  let config = testConfig(
    {
      ...(allow.tools ? { TOOL_ALLOWED_PRIVATE_DESTINATIONS: destinationList(allow.tools) } : {}),
      ...(allow.llm ? { LLM_ALLOWED_PRIVATE_DESTINATIONS: destinationList(allow.llm) } : {}),
      ...(allow.httpAsync ? { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: destinationList(allow.httpAsync) } : {}),
      ...(allow.appRunCallbacks ? { APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS: destinationList(allow.appRunCallbacks) } : {}),
      ...options.env,
    },
    options.mongoUri,
  );
  if (options.liveKit === false) config = { ...config, LIVEKIT_URL: undefined, LIVEKIT_API_KEY: undefined, LIVEKIT_API_SECRET: undefined };
  if (options.monitorCommands) config = { ...config, MONGODB_URI: `${config.MONGODB_URI}?monitorCommands=true` };
  // SB_TEST_LOG_LEVEL=error shows the app's logs when a test needs debugging.
  const ctx = await buildAppContext(config, options.logger ?? createLogger({ level: process.env.SB_TEST_LOG_LEVEL ?? 'silent' }));
  const server: Server = createServer(createApp(ctx));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Callback URLs handed to async tools point at this API (unless a test says otherwise).
  // So do the webhook URLs handed to Twilio (the fake), whose signatures the API checks against it.
  if (!options.env?.PUBLIC_BASE_URL) {
    config = { ...config, PUBLIC_BASE_URL: baseUrl };
    ctx.config = config;
  }

  let worker: Worker | null = null;
  let workerRun: Promise<void> | null = null;
  let nativeConnection: NativeConnection | null = null;
  let sessionBundles: SessionBundleStore | null = null;
  if (options.worker) {
    const temporalWorker = await import('@temporalio/worker');
    const { createSwitchboardWorker } = await import('../../workers/create-worker');
    const { createActivityDeps } = await import('../../workers/activity-deps');
    installRuntime(temporalWorker.Runtime, temporalWorker.DefaultLogger);
    nativeConnection = await temporalWorker.NativeConnection.connect({ address: options.workerTemporalAddress ?? config.TEMPORAL_ADDRESS });
    const deps = createActivityDeps({ config, models: ctx.models, logger: ctx.logger });
    sessionBundles = deps.sessionBundles;
    worker = await createSwitchboardWorker({
      connection: nativeConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      deps,
      payloadCodec: ctx.payloadCodec,
      tracing: ctx.tracing,
      workflowBundle: { codePath: process.env.SB_TEST_WORKFLOW_BUNDLE! },
      ...(options.workerInterceptors ? { interceptors: options.workerInterceptors } : {}),
    });
    workerRun = worker.run();
  }

  return {
    baseUrl,
    ctx,
    config,
    worker,
    sessionBundles,
    async close() {
      if (worker && workerRun) {
        worker.shutdown();
        await workerRun;
      }
      await nativeConnection?.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeAppContext(ctx);
    },
  };
}

export interface SeededTenant {
  tenantId: string;
  projectId: string;
  otherProjectId: string;
  adminKey: string;
  keyWith(permissions: Permission[], projectId?: string | null): Promise<string>;
  user(permissions: Permission[]): Promise<{ email: string; password: string }>;
}

/** A tenant with two projects and an admin key, plus helpers to mint narrower credentials. */
export async function seedTenant(ctx: AppContext, name = `t-${randomBytes(4).toString('hex')}`): Promise<SeededTenant> {
  const tenant = await createTenant(ctx.models, { name });
  const project = await createProject(ctx.models, tenant._id, { name: 'Main' });
  const other = await createProject(ctx.models, tenant._id, { name: 'Other' });
  const { key } = await createApiKey(ctx.models, tenant._id, { name: 'admin', permissions: ['admin'] });
  return {
    tenantId: tenant._id,
    projectId: project._id,
    otherProjectId: other._id,
    adminKey: key,
    async keyWith(permissions, projectId = null) {
      return (await createApiKey(ctx.models, tenant._id, { name: 'test', permissions, projectId })).key;
    },
    async user(permissions) {
      const email = `${randomBytes(4).toString('hex')}@${name}.test`;
      const password = 'correct horse battery staple';
      await createUser(ctx.models, tenant._id, { email, password, permissions });
      return { email, password };
    },
  };
}

// The admin commands (`npm run admin`, infra/admin-cli.ts): tenant management straight against
// MongoDB, using the same operations (core/tenancy, core/platform-keys) as the admin routes.
import { lastUsedTimes } from '../../db/api-key-usage';
import { parseArgs } from 'node:util';
import { isDomainError } from '../../lib/errors';
import { ApiKeyCacheMs } from '../../lib/config';
import { isPermission, type Permission } from '../../lib/permissions';
import { connectMongo } from '../../db/connection';
import { createModels, syncIndexes, type Models } from '../../db/models';
import { createApiKey, createProject, createTenant, createUser, revokeApiKey } from '../../core/tenancy/accounts';
import { presentApiKey, presentProject, presentTenant, presentUser } from '../../core/tenancy/present';
import { masterKeyRing } from '../../lib/master-keys';
import { type KeyRing } from '../../lib/key-ring';
import { isScopeGrantName } from '../../lib/api-scopes';
import { createScope, expiryOf, presentScope } from '../../core/platform-keys/scopes';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';
import { rewrapTenantDataKeys } from '../../db/tenant-data-key';
import { reencryptTenant, tenantsWithSecrets } from '../../db/reencrypt';
import { Encryptor } from '../../lib/encryption';
import { derivedCodecKeyId, FAILURE_CONVERTER_PATH, payloadCodecFromConfig } from '../../lib/payload-codec';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { historyFromJsonObject, historyToJsonObject } from '../../lib/history-json';
import { ensureRetentionSchedule, retentionScheduleId } from '../../core/lifecycle/workflows';
import { z } from 'zod';
import { ConfigSchema } from '../../lib/config';
import { temporalConnectionSettings } from '../../lib/temporal-options';
import { setUpTemporalNamespace } from '../../lib/temporal-setup';
import { searchAttributeSpecs } from '../../workflows/search-attributes';
import { createAgentAssistBot, presentAgentAssistBot, updateAgentAssistBotWebhook, type WebhookRules } from '../../core/agent-assist/hooks';
import { httpAsyncDestinationPolicy } from '../../lib/net/destination';

const USAGE = `Usage: npm run admin -- <command> [options]

Commands:
  list-tenants
  create-tenant   --name <name> [--slug <slug>] [--project <first project name>]
  create-project  --tenant <tenantId> --name <name> [--slug <slug>]
  list-projects   --tenant <tenantId>
  create-user     --tenant <tenantId> --email <email> --password <password> --permissions <p1,p2>
  create-key      --tenant <tenantId> --name <label> (--permissions <p1,p2> | --scope <as-id>)
                  [--project <projectId>] [--environments <dev,staging,production>]
                  [--expires <30_days|90_days|never|ISO date>]
  create-scope    --tenant <tenantId> --project <projectId> --name <scope name>
                  --grants <APP_VIEW,RUN_API,chat.execute,...> [--description <text>]
  list-scopes     --tenant <tenantId> --project <projectId>
  list-keys       --tenant <tenantId>
  create-agent-assist-bot --tenant <tenantId> --project <projectId> --agent <agent name> [--name <label>]
                  [--webhook-url <url>]
                  a bot for the agent-assist hook (docs/agent-assist.md): prints its botId and
                  the HS256 secret that signs its JWTs, once; with --webhook-url, suggestions and
                  summaries are pushed there, signed with the webhookSecret it prints once.
                  Needs ENCRYPTION_KEYS, as the API's.
  set-agent-assist-webhook --tenant <tenantId> --bot <botId> --webhook-url <url|none> [--rotate-secret]
                  sets (or with none removes) a bot's webhook; prints a new webhookSecret when
                  the bot had none or with --rotate-secret. The URL follows the HTTP-async rules
                  (https in production; HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS, as the API's).
  revoke-key      --tenant <tenantId> --key-id <id>
  rewrap-data-keys
                  re-wraps every tenant's data key under the first key of ENCRYPTION_KEYS
                  (reencrypt does this and more). Safe to run again.
  reencrypt       [--tenant <tenantId>]
                  after putting a new master key first in ENCRYPTION_KEYS: tenant by tenant,
                  re-wraps data keys and re-encrypts every value at rest under it, printing
                  counts; then the old key can be removed. Safe to run again; an interrupted
                  run resumes where it stopped.
  temporal-setup  [--retention-days <n>]
                  creates TEMPORAL_NAMESPACE when missing (retention default 7 days) and
                  registers every search attribute the workflows set (docs/operations.md);
                  prints what it did. Safe to run again. Needs no MongoDB.
  replay-history  (--workflow-id <id> [--run-id <id>] | --history <file.json>) [--bundle <path>]
                  [--save <file.json>]
                  replays a workflow's history with this checkout's workflow code (or the
                  prebuilt bundle of --bundle / WORKFLOW_BUNDLE_PATH), decoding payloads with
                  the worker's codec keys and session bundles from MongoDB; prints whether it
                  replayed (exit 0) or the nondeterminism it hit (exit 1). --history reads a
                  history saved by --save or by \`temporal workflow show --output json\`.
  retention-schedule [--every-hours <n>]
                  creates the Temporal schedule data-retention/<TEMPORAL_TASK_QUEUE> that runs the retention sweep
                  every n hours (default 24) on TEMPORAL_TASK_QUEUE, or brings it to that
                  interval (docs/data-lifecycle.md). Safe to run again. Needs no MongoDB.

Permissions: session:read session:execute agent:read agent:write deployment:create
  credential:read credential:write project:export project:import human_task:read
  human_task:write api_key:read api_key:write api_key:manage http_async:read
  http_async:manage channel_connection:read channel_connection:write contact:read
  contact:write admin
Grants (a scope's permission names and operation scopes): docs/public-api.md
Environment: MONGODB_URI (default mongodb://127.0.0.1:27017/switchboard, the npm start stack);
  API_KEY_CACHE_MS (default 1000, as the API's): revoke-key waits this long, until every API
  process refuses the key. ENCRYPTION_KEYS (or ENCRYPTION_KEY), as the API's: rewrap-data-keys,
  reencrypt.
  TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS, TEMPORAL_API_KEY, TEMPORAL_TLS_CERT_PATH,
  TEMPORAL_TLS_KEY_PATH, as the API's: temporal-setup, retention-schedule (and
  TEMPORAL_TASK_QUEUE), replay-history. PAYLOAD_CODEC_KEYS or ENCRYPTION_KEYS and MONGODB_URI, as
  the worker's: replay-history.`;

const TEMPORAL_SETTINGS = { TEMPORAL_ADDRESS: true, TEMPORAL_NAMESPACE: true, TEMPORAL_TLS: true, TEMPORAL_API_KEY: true, TEMPORAL_TLS_CERT_PATH: true, TEMPORAL_TLS_KEY_PATH: true } as const;

/**
 * replay-history: a workflow's history, fetched from Temporal (or read from a file), replayed with
 * this code's workflows as a worker would, to debug a failed or stuck workflow locally. Payloads
 * are decoded with the worker's codec and session bundles read back from MongoDB, so the replay
 * sees what the worker saw.
 */
async function replayHistory(flags: Flags, io: AdminIo): Promise<unknown> {
  const env = Object.fromEntries(Object.entries(io.env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.pick({ ...TEMPORAL_SETTINGS, MONGODB_URI: true, WORKFLOW_BUNDLE_PATH: true, ENCRYPTION_KEYS: true, ENCRYPTION_KEY: true, SECRET_MASTER_KEYS: true, PAYLOAD_CODEC_KEYS: true }).safeParse(env);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  const settings = parsed.data;
  if (!flags['workflow-id'] === !flags.history) throw new Error('give either --workflow-id (fetched from Temporal) or --history <file.json>');
  let history: Parameters<typeof historyToJsonObject>[0];
  let workflowId: string;
  if (flags.history) {
    history = historyFromJsonObject(JSON.parse(readFileSync(flags.history, 'utf8')));
    workflowId = flags.history;
  } else {
    workflowId = flags['workflow-id']!;
    const connection = await Connection.connect(temporalConnectionSettings(settings));
    try {
      history = await new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE }).workflow.getHandle(workflowId, flags['run-id']).fetchHistory();
    } finally {
      await connection.close();
    }
  }
  // As stored (encrypted): it can be handed to whoever holds the keys.
  if (flags.save) writeFileSync(flags.save, JSON.stringify(historyToJsonObject(history), null, 2));
  // The worker's modules load only for this command: the others never need them.
  const [{ Worker }, bundles, { sessionBundleCodec }, { createSessionBundleStore }, { workerTracing }] = await Promise.all([
    import('@temporalio/worker'),
    import('../../workers/workflow-bundle'),
    import('../../workers/session-bundle-storage'),
    import('../../activities/persistence/session-bundles'),
    import('../../workers/tracing'),
  ]);
  const bundlePath = flags.bundle ?? settings.WORKFLOW_BUNDLE_PATH;
  if (bundlePath) bundles.verifyWorkflowBundle(bundlePath);
  const workflowBundle = bundlePath ? { codePath: bundlePath } : { code: await bundles.buildWorkflowBundle() };
  const codec = payloadCodecFromConfig(settings);
  const models = createModels(await connectMongo(settings.MONGODB_URI));
  const events = history.events?.length ?? 0;
  try {
    await Worker.runReplayHistory(
      {
        workflowBundle,
        replayName: 'admin-replay',
        // A traced history's spans are made again: dropped here, not exported.
        sinks: workerTracing(null).sinks,
        dataConverter: {
          payloadConverterPath: bundles.PAYLOAD_CONVERTER_PATH,
          failureConverterPath: FAILURE_CONVERTER_PATH,
          payloadCodecs: [sessionBundleCodec(createSessionBundleStore({ models, cacheSize: 4 })), ...(codec ? [codec] : [])],
        },
      },
      history,
      workflowId,
    );
    return { workflowId, events, replayed: true };
  } catch (err) {
    // What the command is for: why the history does not replay, as its result, with exit code 1.
    io.failed = true;
    return { workflowId, events, replayed: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  } finally {
    await models.connection.close();
  }
}


/** temporal-setup: the namespace and its search attributes, with the API's TEMPORAL_* settings. */
async function temporalSetup(flags: Flags, io: AdminIo): Promise<unknown> {
  const env = Object.fromEntries(Object.entries(io.env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.pick(TEMPORAL_SETTINGS).safeParse(env);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  const retentionDays = z.coerce.number().int().min(1).max(3650).safeParse(flags['retention-days'] ?? '7');
  if (!retentionDays.success) throw new Error('--retention-days takes a whole number of days (1-3650)');
  const connection = await Connection.connect(temporalConnectionSettings(parsed.data));
  try {
    return await setUpTemporalNamespace(connection, parsed.data.TEMPORAL_NAMESPACE, searchAttributeSpecs(), { retentionDays: retentionDays.data });
  } finally {
    await connection.close();
  }
}

/** retention-schedule: the `data-retention/<task queue>` schedule, as a worker creates it at start (docs/data-lifecycle.md). */
async function retentionSchedule(flags: Flags, io: AdminIo): Promise<unknown> {
  const env = Object.fromEntries(Object.entries(io.env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.pick({ TEMPORAL_ADDRESS: true, TEMPORAL_NAMESPACE: true, TEMPORAL_TASK_QUEUE: true, TEMPORAL_TLS: true, TEMPORAL_API_KEY: true, TEMPORAL_TLS_CERT_PATH: true, TEMPORAL_TLS_KEY_PATH: true }).safeParse(env);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  const everyHours = z.coerce.number().int().min(1).max(24 * 30).safeParse(flags['every-hours'] ?? '24');
  if (!everyHours.success) throw new Error('--every-hours takes a whole number of hours (1-720)');
  const connection = await Connection.connect(temporalConnectionSettings(parsed.data));
  try {
    // The schedule's only argument is an empty object: nothing for the payload codec to hide.
    const client = new Client({ connection, namespace: parsed.data.TEMPORAL_NAMESPACE });
    const outcome = await ensureRetentionSchedule(client, { taskQueue: parsed.data.TEMPORAL_TASK_QUEUE, everyHours: everyHours.data });
    return { scheduleId: retentionScheduleId(parsed.data.TEMPORAL_TASK_QUEUE), everyHours: everyHours.data, taskQueue: parsed.data.TEMPORAL_TASK_QUEUE, outcome };
  } finally {
    await connection.close();
  }
}

type Flags = Record<string, string | undefined>;

/** The master key ring from ENCRYPTION_KEYS / ENCRYPTION_KEY (or SECRET_MASTER_KEYS), set as for the API. */
function masterKeysFromEnv(io: AdminIo): KeyRing {
  const env = (name: string) => io.env[name] || undefined;
  const ring = masterKeyRing({ ENCRYPTION_KEYS: env('ENCRYPTION_KEYS'), SECRET_MASTER_KEYS: env('SECRET_MASTER_KEYS'), ENCRYPTION_KEY: env('ENCRYPTION_KEY') });
  if (!ring) throw new Error('set ENCRYPTION_KEYS (id:base64key,..., newest first) to the same value as the API and worker');
  return ring;
}

/** The rules a bot's webhook URL meets, from the API's NODE_ENV and HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS. */
function webhookRulesFromEnv(io: AdminIo): WebhookRules {
  const env = Object.fromEntries(Object.entries(io.env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.pick({ NODE_ENV: true, HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: true }).safeParse(env);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return { production: parsed.data.NODE_ENV === 'production', policy: httpAsyncDestinationPolicy(parsed.data) };
}

function need(flags: Flags, name: string): string {
  const value = flags[name];
  if (!value) throw new Error(`--${name} is required`);
  return value;
}

/**
 * An optional flag's value: undefined when it is not given, an error when it is given empty. An
 * empty `--project` or `--environments` (an unset shell variable) must never quietly stand for
 * "none", which would make a tenant-wide or an every-environment key.
 */
function optional(flags: Flags, name: string, whenOmitted: string): string | undefined {
  const value = flags[name];
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new Error(`--${name} is empty; give a value, or leave it out for ${whenOmitted}`);
  return value;
}

const list = (value: string) => value.split(',').map((p) => p.trim()).filter(Boolean);

function permissions(flags: Flags): Permission[] {
  const names = list(need(flags, 'permissions'));
  const bad = names.filter((p) => !isPermission(p));
  if (bad.length > 0) throw new Error(`unknown permission(s): ${bad.join(', ')}`);
  return names as Permission[];
}

function environments(flags: Flags): string[] | undefined {
  const value = optional(flags, 'environments', 'every environment');
  if (value === undefined) return undefined;
  const names = list(value);
  if (names.length === 0) throw new Error('--environments names no environment (dev, staging, production); leave it out for every environment');
  const bad = names.filter((e) => !(KEY_ENVIRONMENTS as readonly string[]).includes(e));
  if (bad.length > 0) throw new Error(`unknown environment(s): ${bad.join(', ')} (dev, staging, production)`);
  return names;
}

function parseExpiry(value: string): string {
  if (['30_days', '90_days', 'never'].includes(value) || !Number.isNaN(Date.parse(value))) return value;
  throw new Error('--expires takes 30_days, 90_days, never or an ISO date');
}

async function run(models: Models, command: string, flags: Flags, io: AdminIo): Promise<unknown> {
  switch (command) {
    case 'list-tenants':
      return (await models.Tenant.find({}).sort({ createdAt: 1 }).lean()).map(presentTenant);
    case 'create-tenant': {
      const tenant = await createTenant(models, { name: need(flags, 'name'), slug: flags.slug });
      const project = await createProject(models, tenant._id, { name: flags.project ?? 'Default' });
      const { key, apiKey } = await createApiKey(models, tenant._id, { name: 'admin', permissions: ['admin'] });
      return { tenant: presentTenant(tenant), project: presentProject(project), apiKey: presentApiKey(apiKey), key };
    }
    case 'create-project':
      return presentProject(await createProject(models, need(flags, 'tenant'), { name: need(flags, 'name'), slug: flags.slug }));
    case 'list-projects':
      return (await models.Project.find({ tenantId: need(flags, 'tenant') }).lean()).map(presentProject);
    case 'create-user':
      return presentUser(
        await createUser(models, need(flags, 'tenant'), {
          email: need(flags, 'email'),
          password: need(flags, 'password'),
          permissions: permissions(flags),
        }),
      );
    case 'create-key': {
      // The operator holds everything; the key is bounded by what the command names: the tenant,
      // the project (a scope's, for a scoped key) and the environments.
      if (flags.scope !== undefined && flags.permissions !== undefined) throw new Error('give either --permissions or --scope, not both');
      const projectId = optional(flags, 'project', 'a tenant-wide key') ?? null;
      const scopeId = optional(flags, 'scope', 'a permission-style key');
      const { key, apiKey } = await createApiKey(models, need(flags, 'tenant'), {
        name: need(flags, 'name'),
        projectId,
        ...(scopeId ? { scopeId } : { permissions: permissions(flags) }),
        environments: environments(flags),
        expiresAt: flags.expires ? expiryOf(parseExpiry(flags.expires)) : null,
      });
      return { apiKey: presentApiKey(apiKey), key };
    }
    case 'create-scope': {
      const grants = list(need(flags, 'grants'));
      const bad = grants.filter((g) => !isScopeGrantName(g));
      if (bad.length > 0) throw new Error(`unknown grant(s): ${bad.join(', ')}`);
      const tenantId = need(flags, 'tenant');
      const projectId = need(flags, 'project');
      if (!(await models.Project.exists({ _id: projectId, tenantId }))) throw new Error('project not found in this tenant');
      const scope = await createScope(models, { _id: projectId, tenantId }, {
        name: need(flags, 'name'),
        description: flags.description,
        permissions: Object.fromEntries(grants.map((g) => [g, 'YES' as const])),
      });
      return presentScope(scope);
    }
    case 'list-scopes':
      return (await models.ApiScope.find({ tenantId: need(flags, 'tenant'), projectId: need(flags, 'project') }).lean()).map(presentScope);
    case 'create-agent-assist-bot': {
      const [tenantId, projectId, agentName] = [need(flags, 'tenant'), need(flags, 'project'), need(flags, 'agent')];
      // A bot whose agent is missing would answer every hook call with an error: refuse it here.
      if (!(await models.Project.exists({ _id: projectId, tenantId }))) throw new Error(`Project not found: no project ${projectId} in tenant ${tenantId}`);
      if (!(await models.Agent.exists({ tenantId, projectId, name: agentName }))) {
        const names = (await models.Agent.find({ tenantId, projectId }, { name: 1 }).sort({ name: 1 }).lean()).map((a) => a.name);
        throw new Error(`Agent not found: project ${projectId} has no agent named "${agentName}" (its agents: ${names.length > 0 ? names.join(', ') : 'none'})`);
      }
      const webhookUrl = optional(flags, 'webhook-url', 'no webhook');
      const { bot, secret, webhookSecret } = await createAgentAssistBot({ models }, masterKeysFromEnv(io), {
        tenantId,
        projectId,
        agentName,
        name: flags.name,
        ...(webhookUrl !== undefined ? { webhookUrl, webhookRules: webhookRulesFromEnv(io) } : {}),
      });
      return { bot: presentAgentAssistBot(bot), secret, ...(webhookSecret ? { webhookSecret } : {}) };
    }
    case 'set-agent-assist-webhook': {
      const url = need(flags, 'webhook-url');
      const { bot, webhookSecret } = await updateAgentAssistBotWebhook({ models }, masterKeysFromEnv(io), {
        tenantId: need(flags, 'tenant'),
        botId: need(flags, 'bot'),
        webhookUrl: url === 'none' ? null : url,
        rotateSecret: (flags['rotate-secret'] as unknown) === true,
        webhookRules: webhookRulesFromEnv(io),
      });
      return { bot: presentAgentAssistBot(bot), ...(webhookSecret ? { webhookSecret } : {}) };
    }
    case 'list-keys': {
      const tenantId = need(flags, 'tenant');
      const keys = await models.ApiKey.find({ tenantId }).lean();
      const lastUsed = await lastUsedTimes(models.ApiKeyUsage, tenantId, keys.map((k) => k._id));
      return keys.map((k) => presentApiKey(k, lastUsed.get(k._id)));
    }
    case 'revoke-key': {
      const tenantId = need(flags, 'tenant');
      const doc = await revokeApiKey(models, tenantId, need(flags, 'key-id'), ApiKeyCacheMs.parse(io.env.API_KEY_CACHE_MS || undefined));
      return presentApiKey(doc, (await lastUsedTimes(models.ApiKeyUsage, tenantId, [doc._id])).get(doc._id));
    }
    case 'rewrap-data-keys': {
      const ring = masterKeysFromEnv(io);
      return { masterKeyId: ring.current.id, ...(await rewrapTenantDataKeys(models.TenantDataKey, ring)) };
    }
    case 'reencrypt': {
      const ring = masterKeysFromEnv(io);
      const encryptor = new Encryptor(ring);
      const tenants = flags.tenant ? [flags.tenant] : await tenantsWithSecrets(models);
      const summary = { masterKeyId: ring.current.id, tenants: 0, dataKeys: { rewrapped: 0, alreadyCurrent: 0 }, values: { reencrypted: 0, alreadyCurrent: 0 }, failed: [] as { tenantId: string; error: string }[] };
      for (const tenantId of tenants) {
        summary.tenants++;
        try {
          const done = await reencryptTenant(models, ring, encryptor, tenantId);
          summary.dataKeys.rewrapped += done.dataKeys.rewrapped;
          summary.dataKeys.alreadyCurrent += done.dataKeys.alreadyCurrent;
          summary.values.reencrypted += done.values.reencrypted;
          summary.values.alreadyCurrent += done.values.alreadyCurrent;
          io.err(`tenant ${tenantId}: ${done.dataKeys.rewrapped} data key(s) re-wrapped, ${done.values.reencrypted} value(s) re-encrypted\n`);
        } catch (err) {
          // The other tenants go on; a run after the cause is fixed picks this one up.
          summary.failed.push({ tenantId, error: (err as Error).message });
          io.err(`tenant ${tenantId}: failed: ${(err as Error).message}\n`);
        }
      }
      if (summary.failed.length > 0) io.failed = true;
      else {
        const codecKeys = [...ring.byId.keys()].filter((id) => id !== ring.current.id).map(derivedCodecKeyId);
        if (codecKeys.length > 0 && !io.env.PAYLOAD_CODEC_KEYS) {
          io.err(
            `Secrets at rest no longer need the old master key(s). Temporal payloads encrypted with ${codecKeys.join(', ')} (derived from them) still do: keep them listed until those workflow histories are past retention (docs/operations.md).\n`,
          );
        }
      }
      return summary;
    }
    default:
      throw new Error(`unknown command "${command}"\n\n${USAGE}`);
  }
}

/** Where a command reads its settings and writes its output: the process's own, or a caller's. */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  /** Set by a command that went on after a partial failure (reencrypt): the exit code is 1. */
  failed?: boolean;
}

/** Runs one command line (without `node admin-cli.ts`); resolves to the exit code. */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  try {
    await dispatch(argv, io);
    return io.failed ? 1 : 0;
  } catch (err) {
    const message = isDomainError(err) ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
    io.err(`admin: ${message}\n`);
    return 1;
  }
}

async function dispatch(argv: string[], io: AdminIo): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...Object.fromEntries(
        ['name', 'slug', 'project', 'tenant', 'email', 'password', 'permissions', 'expires', 'key-id', 'scope', 'environments', 'grants', 'description', 'retention-days', 'agent', 'webhook-url', 'bot', 'workflow-id', 'run-id', 'history', 'bundle', 'save', 'every-hours'].map((o) => [o, { type: 'string' as const }]),
      ),
      'rotate-secret': { type: 'boolean' as const },
    },
  });
  const command = positionals[0];
  if (!command || command === 'help') {
    io.out(USAGE + '\n');
    return;
  }
  if (command === 'temporal-setup') {
    io.out(JSON.stringify(await temporalSetup(values as Flags, io), null, 2) + '\n');
    return;
  }
  if (command === 'replay-history') {
    io.out(JSON.stringify(await replayHistory(values as Flags, io), null, 2) + '\n');
    return;
  }
  if (command === 'retention-schedule') {
    io.out(JSON.stringify(await retentionSchedule(values as Flags, io), null, 2) + '\n');
    return;
  }
  const uri = io.env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/switchboard';
  const models = createModels(await connectMongo(uri));
  try {
    await syncIndexes(models);
    const result = await run(models, command, values as Flags, io);
    io.out(JSON.stringify(result, null, 2) + '\n');
  } finally {
    await models.connection.close();
  }
}

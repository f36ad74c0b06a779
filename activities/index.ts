// Activity factory: side effects grouped by concern, built from injected dependencies so tests
// pass real or fake parts without module mocking. Workflows import only its type.
import { ApplicationFailure } from '@temporalio/activity';
import type { Json, ToolIR } from '../abl/ir';
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';
import type { DrainView, SessionStartInput } from '../workflows/definitions';
import { findOwned } from '../db/owned';
import { createCallLlm, createCallLlmIfLocal, type RecordLlmUsage, type ResolveLlmTarget } from './llm/call-llm';
import { createRecordTurn } from './persistence/record-turn';
import { createHumanTaskRoom, createRecordHumanTask } from './persistence/human-tasks';
import { createModerate } from './moderation/moderate';
import type { ResolveModeration } from '../providers/moderation/resolve';
import { type SessionBundle, type SessionBundleStore } from './persistence/session-bundles';
import { runHttpTool } from './tools/http-tool';
import { createSandboxToolActivities } from './tools/sandbox-tool';
import { createAgentWorkflowActivities } from './tools/agent-workflows';
import { createMcpToolActivities } from './tools/mcp-tool';
import { findMcpServer } from '../core/mcp-servers/servers';
import { findProjectFunction } from '../core/project-functions/functions';
import { capToolResult } from '../lib/result-cap';
import { DEFAULT_TOOL_SECRET_ENVIRONMENT, scrubFailure, scrubSecrets, secretsForCall, hostGrantsOfCall, type ResolveToolSecrets } from './tools/tool-secrets';
import { createCancelSuspension, createStartAsyncCall } from './tools/async-call';
import { type Encryptor } from '../lib/encryption';
import { Context } from '@temporalio/activity';
import { type Client } from '@temporalio/client';
import { createAppRunActivities } from './app-runs/app-run';
import { createHttpAsyncConversationActivities } from './http-async/conversation';
import { createHttpAsyncDeliveryActivities } from './http-async/delivery';
import { createOutboundCallActivities } from './telephony/outbound-calls';
import { createRecordingFetchActivities } from './telephony/recording-fetch';
import { createAgentMemoryActivities } from './memory/facts';
import { createAgentAssistActivities } from './agent-assist/assist';
import { createLifecycleActivities } from './lifecycle/lifecycle';
import { createVoiceRoomActivities } from './voice/rooms';
import { createToolGuards, type ToolGuards } from './tools/tool-guards';
import { toolRetryPlan } from '../abl/tool-retry';
import { takeResultSecrets, vaultKeysOf } from './tools/result-secrets';
import { type SecretVault } from '../db/tool-vault';

export interface ActivityDeps {
  models: Models;
  logger: Logger;
  config: Config;
  resolveLlm: ResolveLlmTarget;
  recordUsage: RecordLlmUsage;
  /** The compiled agents a session runs, by content hash (activities/persistence/session-bundles.ts). */
  sessionBundles: SessionBundleStore;
  /** Values of the {{secrets.NAME}} a tool references, from the encrypted tool-secret store (db/tool-secret.ts). */
  resolveToolSecrets: ResolveToolSecrets;
  /** Secrets at rest (callback secrets); null when no master key (ENCRYPTION_KEYS or ENCRYPTION_KEY) is set. */
  encryptor: Encryptor | null;
  /** The moderation provider of a provider guardrail, per project (providers/moderation/resolve.ts). */
  resolveModeration: ResolveModeration;
  /**
   * A client on the worker's own connection, for activities that talk to other workflows (an
   * async app run sends its turn to the session). Set by createSwitchboardWorker.
   */
  temporalClient?: Client | null;
  /** The session's SecretRef vault (RESULT_SECRETS / {{_secret.KEY}}); absent: nothing is stored and placeholders render empty. */
  secretVault?: SecretVault | null;
  /** Retry waits, rate limits and circuit breakers of HTTP tools; built on `models` when absent. */
  toolGuards?: ToolGuards;
}

/** A drain looks at this many of the deployment's sessions per round (the rest in later rounds). */
export const DRAIN_SESSIONS_PER_ROUND = 500;

export interface CallToolInput {
  tenantId: string;
  projectId: string;
  tool: ToolIR;
  args: Record<string, Json>;
  timeoutMs: number;
  messageMetadata?: Record<string, unknown>;
  /**
   * The environment whose tool secrets the call uses. Sessions carry none yet, so the workflow
   * leaves it unset and the activity uses `dev` (DEFAULT_TOOL_SECRET_ENVIRONMENT).
   */
  toolSecretEnvironment?: string;
  /** The session whose vault the tool's RESULT_SECRETS fill and its {{_secret.KEY}} read. */
  sessionId?: string;
}

export function createActivities(deps: ActivityDeps) {
  let guards = deps.toolGuards ?? null;
  const toolGuards = (): ToolGuards => (guards ??= createToolGuards({ connection: deps.models.connection, circuits: deps.models.ToolCircuit }));
  return {
    callLlm: createCallLlm(deps),
    callLlmIfLocal: createCallLlmIfLocal(deps),
    moderate: createModerate(deps),
    recordTurn: createRecordTurn(deps),
    startAsyncCall: createStartAsyncCall(deps),
    cancelSuspension: createCancelSuspension(deps),
    recordHumanTask: createRecordHumanTask(deps),
    humanTaskRoom: createHumanTaskRoom(deps),
    ...createAppRunActivities(deps),
    ...createHttpAsyncConversationActivities(deps),
    ...createHttpAsyncDeliveryActivities(deps),
    ...createOutboundCallActivities(deps),
    ...createRecordingFetchActivities(deps),
    ...createSandboxToolActivities({ ...deps, findFunction: (scope, name) => findProjectFunction(deps.models, scope, name) }),
    ...createMcpToolActivities({
      findServer: (scope, name) => findMcpServer(deps.models, scope, name),
      resolveToolSecrets: deps.resolveToolSecrets,
      stdioServers: deps.config?.MCP_STDIO_SERVERS ?? {},
      allowPrivate: deps.config?.TOOL_ALLOW_PRIVATE_NETWORKS ?? false,
      allowedPrivateDestinations: deps.config?.TOOL_ALLOWED_PRIVATE_DESTINATIONS ?? [],
      maxResultBytes: deps.config?.TOOL_RESULT_HISTORY_MAX_BYTES,
      signal: () => {
        try {
          return Context.current().cancellationSignal;
        } catch {
          return undefined;
        }
      },
    }),
    ...createAgentWorkflowActivities(deps),
    ...createAgentMemoryActivities(deps),
    ...createAgentAssistActivities(deps),
    ...createLifecycleActivities(deps),
    ...createVoiceRoomActivities(deps),

    /** The session's bundle; its result reaches history as the hash only (workers/session-bundle-storage.ts). */
    async loadSessionBundle(query: { tenantId: string; projectId: string; bundleRef: SessionStartInput['bundleRef'] }): Promise<SessionBundle> {
      const compiled = await deps.sessionBundles.load(query);
      if (!compiled) throw ApplicationFailure.nonRetryable('Project not found or has no agents', 'NOT_FOUND');
      return compiled;
    },

    /** The deployment's status and its sessions that have not ended, least recently active first. */
    async viewDeploymentDrain(query: { tenantId: string; projectId: string; deploymentId: string }): Promise<DrainView> {
      const scope = { tenantId: query.tenantId, projectId: query.projectId };
      const deployment = await findOwned(deps.models.Deployment, query.deploymentId, scope);
      if (!deployment) return { status: 'missing', retireReason: null, sessions: [] };
      const sessions = await deps.models.Session.find({ ...scope, deploymentId: query.deploymentId, status: 'active' })
        .select({ _id: 1, lastActivityAt: 1 })
        .sort({ lastActivityAt: 1 })
        .limit(DRAIN_SESSIONS_PER_ROUND)
        .lean();
      return {
        status: deployment.status,
        retireReason: deployment.retireReason ?? null,
        sessions: sessions.map((s) => ({ id: s._id, lastActivityMs: new Date(s.lastActivityAt).getTime() })),
      };
    },

    async callTool(input: CallToolInput): Promise<Json> {
      const activity = Context.current();
      const scope = { tenantId: input.tenantId, projectId: input.projectId };
      const guard = toolGuards();
      // The tool's retry_delay / retry_policy: Temporal starts the retry at once, the wait is here.
      await guard.waitForAttempt(input.tool, activity.info.attempt, activity.cancellationSignal);
      await guard.checkCircuit(scope, input.tool);
      // Resolved here, in the activity: values never enter the workflow or its history.
      const secrets = await secretsForCall(deps.resolveToolSecrets, {
        tenantId: input.tenantId,
        projectId: input.projectId,
        tool: input.tool,
        ...(input.toolSecretEnvironment ? { environment: input.toolSecretEnvironment } : {}),
      });
      await guard.acquireRate(scope, input.tool, input.timeoutMs, activity.cancellationSignal);
      const vaultPlace = input.sessionId ? { ...scope, sessionId: input.sessionId } : null;
      // Fail-closed: a key that is missing, expired, used up or not for this tool renders empty.
      const read = vaultPlace && deps.secretVault ? await deps.secretVault.take(vaultPlace, input.tool.name, vaultKeysOf(input.tool)) : {};
      const vault = Object.fromEntries(Object.entries(read).map(([k, v]) => [k, v.value]));
      let result: Json;
      try {
        result = await runHttpTool(
          { tool: input.tool, args: input.args, timeoutMs: input.timeoutMs, secrets: secrets.values, secretDestinations: secrets.destinations, vaultSecrets: vault,
          vaultDestinations: Object.fromEntries(Object.entries(read).map(([k, v]) => [k, v.hostGrants])),
          credentialScope: JSON.stringify([input.tenantId, input.projectId, input.toolSecretEnvironment ?? DEFAULT_TOOL_SECRET_ENVIRONMENT]), messageMetadata: input.messageMetadata },
          {
            allowPrivate: deps.config.TOOL_ALLOW_PRIVATE_NETWORKS,
            allowedPrivateDestinations: deps.config.TOOL_ALLOWED_PRIVATE_DESTINATIONS,
            signal: activity.cancellationSignal,
            maxResponseBytes: deps.config.TOOL_RESPONSE_MAX_BYTES,
          },
        );
      } catch (err) {
        await guard.recordOutcome(scope, input.tool, err).catch(() => undefined);
        // A failure's message and details go to history and the trace: no resolved value may ride along.
        throw finalAfterLastAttempt(scrubFailure(err, { ...secrets.values, ...prefixed(vault) }), input.tool, activity.info.attempt);
      }
      await guard.recordOutcome(scope, input.tool, null).catch(() => undefined);
      // A server that echoes a credential back must not put it in the result either.
      result = scrubSecrets(result, input.tool.scrub_secrets === false ? secrets.values : { ...secrets.values, ...prefixed(vault) });
      // RESULT_SECRETS go to the vault; the result keeps `[secret]` in their place.
      // A value this call obtained may go only where the credentials it carried may.
      const produced = takeResultSecrets(input.tool, result, hostGrantsOfCall(secrets, read));
      if (produced.entries.length > 0) {
        if (vaultPlace && deps.secretVault) await deps.secretVault.put(vaultPlace, produced.entries);
        else deps.logger.warn({ tenantId: input.tenantId, projectId: input.projectId, tool: input.tool.name }, 'RESULT_SECRETS not stored: no session or no secret vault (encryption not configured)');
        result = produced.result;
      }
      // What this returns is written to workflow history: only a bounded cut of a large result.
      const capped = capToolResult(result, deps.config.TOOL_RESULT_HISTORY_MAX_BYTES);
      if (capped.truncated) {
        deps.logger.warn(
          { tenantId: input.tenantId, projectId: input.projectId, tool: input.tool.name, resultBytes: capped.originalBytes, maxBytes: deps.config.TOOL_RESULT_HISTORY_MAX_BYTES },
          'tool result truncated to TOOL_RESULT_HISTORY_MAX_BYTES',
        );
      }
      return capped.value;
    },
  };
}

/**
 * The tool's `retry` counts the calls it sends: once this attempt is its last, a retryable failure
 * is final. Temporal allows a few attempts more (workflows/effects.ts), so an attempt lost with its
 * worker is still made again.
 */
function finalAfterLastAttempt(err: unknown, tool: ToolIR, attempt: number): unknown {
  if (!(err instanceof ApplicationFailure) || err.nonRetryable || attempt < toolRetryPlan(tool).attempts) return err;
  return ApplicationFailure.create({ message: err.message, type: err.type ?? undefined, nonRetryable: true, details: (err.details ?? []) as unknown[] });
}

/** Vault values keyed apart from the tool secrets they are scrubbed beside (names may coincide). */
const prefixed = (vault: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(vault).map(([k, v]) => [`_secret.${k}`, v]));

export type Activities = ReturnType<typeof createActivities>;

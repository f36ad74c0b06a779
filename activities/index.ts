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
import { createMcpToolActivities } from './tools/mcp-tool';
import { findMcpServer } from '../core/mcp-servers/servers';
import { findProjectFunction } from '../core/project-functions/functions';
import { capToolResult } from '../lib/result-cap';
import { DEFAULT_TOOL_SECRET_ENVIRONMENT, scrubFailure, scrubSecrets, secretsForCall, type ResolveToolSecrets } from './tools/tool-secrets';
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
}

export function createActivities(deps: ActivityDeps) {
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
    ...createAgentMemoryActivities(deps),
    ...createAgentAssistActivities(deps),

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
      // Resolved here, in the activity: values never enter the workflow or its history.
      const secrets = await secretsForCall(deps.resolveToolSecrets, {
        tenantId: input.tenantId,
        projectId: input.projectId,
        tool: input.tool,
        ...(input.toolSecretEnvironment ? { environment: input.toolSecretEnvironment } : {}),
      });
      let result: Json;
      try {
        result = await runHttpTool(
          { tool: input.tool, args: input.args, timeoutMs: input.timeoutMs, secrets: secrets.values, secretDestinations: secrets.destinations,
          credentialScope: JSON.stringify([input.tenantId, input.projectId, input.toolSecretEnvironment ?? DEFAULT_TOOL_SECRET_ENVIRONMENT]), messageMetadata: input.messageMetadata },
          {
            allowPrivate: deps.config.TOOL_ALLOW_PRIVATE_NETWORKS,
            allowedPrivateDestinations: deps.config.TOOL_ALLOWED_PRIVATE_DESTINATIONS,
            signal: Context.current().cancellationSignal,
            maxResponseBytes: deps.config.TOOL_RESPONSE_MAX_BYTES,
          },
        );
      } catch (err) {
        // A failure's message and details go to history and the trace: no resolved value may ride along.
        throw scrubFailure(err, secrets.values);
      }
      // A server that echoes a credential back must not put it in the result either.
      result = scrubSecrets(result, secrets.values);
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

export type Activities = ReturnType<typeof createActivities>;

// Request and response schemas of the agentic-app session routes (docs/agentic-app-sessions.md):
// session create, list, detail and terminate, runs/execute and run status.
import { z } from 'zod';
import '../openapi/registry';
import { APP_SESSION_SOURCES } from '../../db/app-session';
import { queryInt, MAX_OFFSET, NOT_BLANK_PATTERN, ZDateTime } from '../http/schemas';
import { METADATA_LIMITS } from '../../core/chat/turns';
import { APP_SESSION_ID_PATTERN } from '../../core/agentic-apps/sessions';
import { ATTACHMENT_ID_PATTERN } from '../../core/attachments/store';
import { MESSAGE_MAX_ATTACHMENTS } from '../../core/attachments/message';

const ZFileId = z.string().regex(ATTACHMENT_ID_PATTERN, 'must be a file id (att_…)');

/** The environments an app runs in; the path segment is matched in any letter case. */
export const APP_ENVIRONMENTS = ['dev', 'staging', 'production'] as const;

export const ZAppId = z.string().min(1).max(64).describe('The app: a project id (a CUID)');
/** `dev|staging|production` in any letter case, spelled out so every regex dialect reads it the same. */
const anyCase = (word: string) => [...word].map((c) => `[${c}${c.toUpperCase()}]`).join('');
export const ENVIRONMENT_PATTERN = new RegExp(`^(?:${APP_ENVIRONMENTS.map(anyCase).join('|')})$`);

const ZEnvName = z
  .string()
  .regex(ENVIRONMENT_PATTERN, 'must be dev, staging or production')
  .transform((v) => v.toLowerCase() as (typeof APP_ENVIRONMENTS)[number])
  .describe('Environment: dev, staging or production (any letter case)');

export const ZAppParams = z.object({ appId: ZAppId });
export const ZAppEnvParams = z.object({ appId: ZAppId, envName: ZEnvName });
export const ZRunParams = z.object({
  appId: ZAppId,
  envName: ZEnvName,
  runId: z.string().regex(/^r-[a-z0-9]{10,40}$/, 'must be a run id (r-…)').describe('Run id from runs/execute'),
});

const ZAppSessionId = z.string().regex(APP_SESSION_ID_PATTERN, 'must be a session id (s-…)');
const ZReference = z.string().min(1).max(256);

export const ZSessionIdentityItem = z.object({
  type: z.enum(['sessionIdentity', 'sessionReference', 'userReference']).describe('sessionIdentity (a session id) > sessionReference > userReference'),
  value: ZReference,
});
export const ZSessionIdentity = z.array(ZSessionIdentityItem).max(3).describe('Find-or-create keys; the first item of each type counts');
export type TSessionIdentity = z.infer<typeof ZSessionIdentity>;

export const ZSource = z.enum(APP_SESSION_SOURCES).describe('Where the session comes from; a filter in the session logs. Default AP');

export const ZCreateAppSessionBody = z.object({
  sessionIdentity: ZSessionIdentity.default([]),
  source: ZSource.optional(),
});

const ZEvent = z.object({ type: z.string(), content: z.record(z.string(), z.unknown()), params: z.record(z.string(), z.unknown()).optional() });
const ZOutputItem = z.object({ type: z.string(), content: z.string() });
export const ZFileUploadConfig = z.object({
  enabled: z.boolean(),
  isAttachmentsEnabled: z.boolean(),
  maxFileCount: z.number(),
  maxFileSize: z.number().describe('MB'),
  maxTokens: z.number(),
});

export const ZAppSessionSchema = z
  .object({
    sessionId: z.string().describe('s-…'),
    sessionReference: z.string().nullable(),
    userReference: z.string().nullable(),
    status: z.enum(['idle', 'busy', 'error', 'terminated']),
    userId: z.string().describe('u-…'),
    createdAt: z.string(),
    source: z.string(),
  })
  .openapi('AppSession');

const ZSessionInfo = z.object({
  status: z.string(),
  userReference: z.string().nullable(),
  sessionReference: z.string().nullable(),
  userId: z.string(),
  sessionId: z.string(),
  runId: z.string().nullable(),
  appId: z.string(),
  attachments: z.array(z.unknown()),
});

export const ZCreateAppSessionResponse = z
  .object({
    session: ZAppSessionSchema.optional(),
    messageId: z.string().optional().describe('With IDP_Redirect only'),
    sessionInfo: ZSessionInfo.optional().describe('With IDP_Redirect only'),
    events: z.array(ZEvent),
    output: z.array(ZOutputItem).optional(),
    allowedMimeTypes: z.array(z.string()),
    fileUploadConfig: ZFileUploadConfig,
  })
  .openapi('AppSessionCreateResponse');

export const ZListAppSessionsQuery = z.object({
  offset: queryInt(0, MAX_OFFSET, 0).describe('Items to skip'),
  limit: queryInt(1, 100, 20).describe('Page size (1-100)'),
});
export const ZListAppSessionsBody = z.object({
  env_name: z.string().regex(ENVIRONMENT_PATTERN, 'must be dev, staging or production').optional().describe('Environment (any letter case); all when omitted'),
  start_time: ZDateTime.optional().describe('Sessions created at or after; default 24 hours before end_time'),
  end_time: ZDateTime.optional().describe('Sessions created at or before; default now'),
  user_reference_id: ZReference.optional(),
  session_reference_id: ZReference.optional(),
});
export type TListAppSessionsBody = z.infer<typeof ZListAppSessionsBody>;

export const ZListAppSessionsResponse = z
  .object({
    sessions: z.array(
      z.object({
        session_id: z.string(),
        session_reference_id: z.string(),
        user_reference_id: z.string(),
        env_name: z.string(),
        start_time: z.string(),
        end_time: z.string().nullable(),
        last_activity_at: z.string(),
        source: z.string().nullable(),
      }),
    ),
    total_count: z.number(),
  })
  .openapi('AppSessionList');

const ZInclude = z.enum(['traces', 'observations']);
export const ZAppSessionDetailQuery = z.object({
  session_id: ZAppSessionId.optional().describe('The session (s-…); `sessionId` is accepted too; with neither, no session is found (404)'),
  sessionId: ZAppSessionId.optional(),
  include: z.union([ZInclude, z.array(ZInclude).max(2)]).optional().describe('traces, observations (repeat for both); observations imply traces'),
});

const ZObservation = z.object({
  observation_id: z.string(),
  type: z.string(),
  name: z.string(),
  start_time: z.string(),
  end_time: z.string(),
  latency: z.number(),
  input: z.unknown(),
  output: z.unknown(),
  model: z.string().nullable(),
  provider: z.string().nullable(),
  token_usage: z.object({ input: z.number(), output: z.number(), total: z.number() }).nullable(),
  parent_observation_id: z.string().nullable(),
});
const ZTrace = z.object({
  trace_id: z.string(),
  timestamp: z.string(),
  environment: z.string(),
  user_id: z.string(),
  input: z.string().nullable(),
  output: z.string().nullable(),
  latency: z.number(),
  app_version_id: z.string(),
  env_id: z.string(),
  source: z.string(),
  observations: z.array(ZObservation).optional(),
});
export const ZAppSessionDetailResponse = z
  .object({
    sessions: z.array(
      z.object({
        session_id: z.string(),
        created_at: z.string(),
        source: z.string(),
        environment: z.string(),
        user_id: z.string(),
        session_reference: z.string().nullable(),
        app_version_id: z.string(),
        latency: z.number(),
        traces: z.array(ZTrace).optional(),
      }),
    ),
    pagination: z.object({ page: z.number(), limit: z.number(), total: z.number() }),
  })
  .openapi('AppSessionDetail');

export const ZTerminateBody = z.object({
  sessionIdentity: z
    .array(z.object({ type: z.enum(['sessionReference', 'sessionId']), value: ZReference }))
    .min(1)
    .max(2)
    .describe('sessionId (s-…) or sessionReference; sessionId wins when both are given'),
});

export const ZTerminateResponse = z
  .object({
    status: z.literal('terminated'),
    userReference: z.string().nullable(),
    sessionReference: z.string().nullable(),
    userId: z.string().nullable(),
    sessionId: z.string().nullable(),
    appId: z.string(),
    attachments: z.array(z.object({ fileId: z.string(), fileName: z.string(), fileType: z.string() })),
    events: z.array(ZEvent),
  })
  .openapi('AppSessionTerminateResponse');

/** Longest input item, as the reference platform's compatibility API takes. */
export const INPUT_ITEM_MAX_CHARS = 16_000;

export const ZRunInputItem = z.object({
  type: z.enum(['text', 'tool_input']).describe('text: what the user said; tool_input: structured input for the agent\'s tools, as text (e.g. JSON)'),
  content: z.string().min(1).max(INPUT_ITEM_MAX_CHARS).regex(NOT_BLANK_PATTERN, 'must not be blank'),
});

/**
 * JSON nested at most `levels` containers deep, spelled out level by level so the document states
 * the depth limit of run metadata (METADATA_LIMITS.maxDepth: the metadata object is the first).
 */
function nestedJson(levels: number): z.ZodType {
  const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
  if (levels === 0) return scalar;
  const inner = nestedJson(levels - 1);
  return z.union([scalar, z.array(inner), z.record(z.string(), inner)]);
}
export const ZRunMetadata = z
  .record(z.string(), nestedJson(METADATA_LIMITS.maxDepth - 1))
  .refine((m) => Object.keys(m).length <= METADATA_LIMITS.maxKeys, `at most ${METADATA_LIMITS.maxKeys} keys`)
  .openapi({ maxProperties: METADATA_LIMITS.maxKeys });

export const ZExecuteRunBody = z.object({
  sessionIdentity: ZSessionIdentity,
  input: z.array(ZRunInputItem).min(1).max(8),
  stream: z
    .object({ enable: z.boolean().default(false), streamMode: z.enum(['tokens', 'messages', 'custom']).default('messages') })
    .optional()
    .describe('SSE of the run\'s events; wins over isAsync'),
  isAsync: z.boolean().default(false),
  callbackUrl: z.url({ protocol: /^https?$/ }).max(2048).optional().describe('http(s) URL the result is POSTed to: https in production, a public destination (422 otherwise), as HTTP-async callback URLs'),
  callbackToken: z.string().min(16).max(512).optional().describe('Signs the callback (X-ABL-Signature); required with callbackUrl; never sent'),
  metadata: ZRunMetadata.optional().describe('Per-run; max 16 KB of JSON, 50 keys, depth 5'),
  attachments: z
    .object({
      enable: z.boolean().default(false).describe('Carry files of the session in this run'),
      includeFiles: z.array(ZFileId).max(MESSAGE_MAX_ATTACHMENTS).optional().describe('These files, in this order (404 for one that is not the session\'s); default every file of the session'),
      excludeFiles: z.array(ZFileId).max(1000).optional().describe('Files left out'),
    })
    .optional()
    .describe('Files uploaded to the session (POST …/sessions/{sessionId}/attachments); the agent gets their names, types, sizes and text content as with POST /api/v1/chat/send'),
  source: ZSource.optional(),
})
  // Said in the document too, so a client (and the fuzzer) knows: a callback needs its token.
  .openapi({ anyOf: [{ not: { required: ['callbackUrl'] } }, { required: ['callbackToken'] }] });
export type TExecuteRunBody = z.infer<typeof ZExecuteRunBody>;

export const ZExecuteRunResponse = z
  .object({
    messageId: z.string().describe('msg-…'),
    output: z.array(ZOutputItem),
    status: z.string().optional().describe('`processing` on 202 (async)'),
    runId: z.string().optional(),
    message: z.string().optional(),
    sessionInfo: ZSessionInfo,
  })
  .openapi('AppRunResponse');

/** The named events of a streamed run (docs/agentic-app-sessions.md). */
export const RUN_STREAM_EVENTS = ['run.started', 'trace', 'run.completed', 'run.failed'] as const;

/** One Server-Sent Event of a streamed run (an OpenAPI 3.1 event-stream schema describes each event). */
export const ZRunStreamEvent = z
  .object({
    event: z.enum(RUN_STREAM_EVENTS),
    data: z.string().describe('One JSON document with eventIndex, type and isLastEvent'),
  })
  .describe('text/event-stream (stream.enable): run.started, one trace event per trace event of the turn, then run.completed or run.failed (isLastEvent: true)')
  .openapi('AppRunStreamEvent', { example: { event: 'run.started', data: '{"eventIndex":0,"type":"run.started","runId":"r-…","messageId":"msg-…","isLastEvent":false}' } });

export const ZRunStatusResponse = z
  .object({
    run: z.object({
      runId: z.string(),
      messageId: z.string(),
      status: z.enum(['pending', 'running', 'success', 'failed']),
      output: z.array(ZOutputItem),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
      createdAt: z.string(),
      finishedAt: z.string().nullable(),
      callback: z.object({ attempts: z.number(), deliveredAt: z.string().nullable() }).nullable(),
    }),
    sessionInfo: ZSessionInfo,
  })
  .openapi('AppRunStatus');

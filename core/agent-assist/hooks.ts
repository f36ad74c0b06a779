// Agent-assist hooks: bots (a hook URL's botId, its project, agent and signing secret), the hook's
// JWT check, and handing one hook call's events to the conversation's workflow, which judges
// their order (workflows/agent-assist-conversation.ts) and runs assist mode over them; a bot's
// webhook for the suggestions and summaries assist mode pushes.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { TypedSearchAttributes } from '@temporalio/common';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { errors as joseErrors, jwtVerify } from 'jose';
import { type CoreContext } from '../context';
import { type Models } from '../../db/models';
import { type KeyRing } from '../../lib/key-ring';
import { DomainError, isDomainError } from '../../lib/errors';
import { sealBotSecret, sealBotWebhookSecret, unsealBotSecret, type AgentAssistBotDoc } from '../../db/agent-assist-bot';
import { checkCallbackUrlRules } from '../../lib/net/callback-url';
import { type DestinationPolicy } from '../../lib/net/destination';
import { newSigningSecret } from '../../lib/http-async/signing';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { causes, isWorkflowAlreadyStarted, isWorkflowNotFound, sendUpdateResendingDropped, STATE_QUERY_TIMEOUT_MS, TEMPORAL_CALL_TIMEOUT_MS, temporalClient, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';
import { agentAssistDetailQuery, agentAssistEventUpdate, type AgentAssistDetail, type AgentAssistEvent, type AgentAssistHookResult, type AgentAssistStartInput } from '../../workflows/definitions';
import { ChannelKey, ProjectIdKey, TenantIdKey } from '../../workflows/search-attributes';

export const AGENT_ASSIST_WORKFLOW_TYPE = 'agentAssistConversation';
/** The out-of-order failure type the workflow refuses with (workflows/agent-assist-conversation.ts). */
const OUT_OF_ORDER = 'AGENT_ASSIST_EVENT_OUT_OF_ORDER';
/** How long an ended conversation still answers a repeated event as a duplicate. */
export const AGENT_ASSIST_ENDED_RETENTION_MS = 60 * 60 * 1000;
/** The longest a hook JWT may still be valid for when it arrives (its `exp` past this is refused). */
export const AGENT_ASSIST_MAX_TOKEN_LIFETIME_S = 60 * 60;
const BOT_ID_PATTERN = /^aab-[0-9a-f]{24}$/;

export function agentAssistWorkflowId(botId: string, conversationId: string): string {
  return `agent-assist/${botId}/${conversationId}`;
}

export interface CreatedAgentAssistBot {
  bot: AgentAssistBotDoc;
  /** The HS256 signing secret (base64url), shown once. */
  secret: string;
  /** The webhook's signing secret (`whsec_…`), shown once; only when a webhook URL was given. */
  webhookSecret?: string;
}

/** The rules a bot's webhook URL must meet: those of HTTP-async callback URLs (docs/http-async.md). */
export interface WebhookRules {
  production: boolean;
  policy: DestinationPolicy;
}

/** The webhook URL as stored: parsed, https in production, a public destination by resolution (422 otherwise). */
async function checkWebhookUrl(raw: string, rules: WebhookRules): Promise<string> {
  const checked = await checkCallbackUrlRules(raw, { ...rules, field: 'webhookUrl' });
  if (!checked.ok) throw new DomainError('UNPROCESSABLE_ENTITY', checked.message);
  return checked.url;
}

/** A new bot of `projectId` assisted by `agentName`, with a fresh 256-bit signing secret (and a webhook when `webhookUrl` is given). */
export async function createAgentAssistBot(
  ctx: { models: Pick<Models, 'Project' | 'TenantDataKey' | 'AgentAssistBot'> },
  ring: KeyRing,
  input: { tenantId: string; projectId: string; agentName: string; name?: string; webhookUrl?: string; webhookRules?: WebhookRules },
): Promise<CreatedAgentAssistBot> {
  const project = await ctx.models.Project.findOne({ _id: input.projectId, tenantId: input.tenantId }).lean();
  if (!project) throw DomainError.notFound('Project');
  const webhookUrl = input.webhookUrl !== undefined ? await checkWebhookUrl(input.webhookUrl, input.webhookRules ?? { production: true, policy: { allowPrivateNetworks: false, allowedPrivateDestinations: [] } }) : null;
  const botId = `aab-${randomBytes(12).toString('hex')}`;
  const secret = randomBytes(32);
  const sealed = await sealBotSecret(ctx.models.TenantDataKey, ring, input.tenantId, botId, secret);
  const webhookSecret = webhookUrl ? newSigningSecret() : undefined;
  const bot = await ctx.models.AgentAssistBot.create({
    _id: botId,
    tenantId: input.tenantId,
    projectId: input.projectId,
    agentName: input.agentName,
    name: input.name ?? input.agentName,
    secret: sealed,
    webhookUrl,
    webhookSecret: webhookSecret ? await sealBotWebhookSecret(ctx.models.TenantDataKey, ring, input.tenantId, botId, webhookSecret) : null,
  });
  return { bot: bot.toObject(), secret: secret.toString('base64url'), ...(webhookSecret ? { webhookSecret } : {}) };
}

/**
 * Sets (or with null removes) a bot's webhook. A bot that had no signing secret for it gets one,
 * returned once; `rotateSecret` replaces an existing one. 404 for a bot not of this tenant.
 */
export async function updateAgentAssistBotWebhook(
  ctx: { models: Pick<Models, 'TenantDataKey' | 'AgentAssistBot'> },
  ring: KeyRing,
  input: { tenantId: string; botId: string; webhookUrl: string | null; rotateSecret?: boolean; webhookRules: WebhookRules },
): Promise<{ bot: AgentAssistBotDoc; webhookSecret?: string }> {
  const bot = await ctx.models.AgentAssistBot.findOne({ _id: input.botId, tenantId: input.tenantId }).lean();
  if (!bot) throw DomainError.notFound('Agent-assist bot');
  if (input.webhookUrl === null) {
    const updated = await ctx.models.AgentAssistBot.findOneAndUpdate({ _id: bot._id, tenantId: bot.tenantId }, { $set: { webhookUrl: null, webhookSecret: null } }, { new: true }).lean();
    return { bot: updated! };
  }
  const webhookUrl = await checkWebhookUrl(input.webhookUrl, input.webhookRules);
  const webhookSecret = !bot.webhookSecret || input.rotateSecret ? newSigningSecret() : undefined;
  const set: Record<string, unknown> = { webhookUrl };
  if (webhookSecret) set.webhookSecret = await sealBotWebhookSecret(ctx.models.TenantDataKey, ring, bot.tenantId, bot._id, webhookSecret);
  const updated = await ctx.models.AgentAssistBot.findOneAndUpdate({ _id: bot._id, tenantId: bot.tenantId }, { $set: set }, { new: true }).lean();
  return { bot: updated!, ...(webhookSecret ? { webhookSecret } : {}) };
}

export function presentAgentAssistBot(bot: AgentAssistBotDoc) {
  return { botId: bot._id, tenantId: bot.tenantId, projectId: bot.projectId, agentName: bot.agentName, name: bot.name, webhookUrl: bot.webhookUrl ?? null, createdAt: bot.createdAt.toISOString() };
}

const unauthorized = (message: string) => new DomainError('UNAUTHORIZED', message);

/**
 * The bot a hook call is for, once its JWT (`auth`, or `token`) is signed HS256 with that bot's
 * secret, unexpired, and valid for at most AGENT_ASSIST_MAX_TOKEN_LIFETIME_S more. A call
 * without a token is 401 whatever the bot; an unknown bot is 404 (its 96 random bits are not
 * guessable). jose compares the signature in constant time.
 */
export async function authenticateHookCall(ctx: Pick<CoreContext, 'config' | 'models'>, botId: string, token: string | undefined): Promise<AgentAssistBotDoc> {
  if (!token) throw unauthorized('Missing JWT: send it in the `auth` header');
  const bot = BOT_ID_PATTERN.test(botId) ? await ctx.models.AgentAssistBot.findById(botId).lean() : null;
  if (!bot) throw DomainError.notFound('Agent-assist bot');
  let secret: Buffer;
  try {
    secret = await unsealBotSecret(ctx.models.TenantDataKey, requireMasterKeys(ctx as CoreContext), bot);
  } catch (err) {
    if (isDomainError(err)) throw err;
    throw new DomainError('SERVICE_UNAVAILABLE', { message: "The bot's signing secret cannot be read", cause: err });
  }
  let payload;
  try {
    ({ payload } = await jwtVerify(token, secret, { algorithms: ['HS256'], requiredClaims: ['exp'], clockTolerance: 30 }));
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw unauthorized('The JWT has expired');
    if (err instanceof joseErrors.JWTClaimValidationFailed) throw unauthorized(`Invalid JWT: ${err.message}`);
    throw unauthorized('Invalid JWT for this bot');
  }
  if (typeof payload.exp !== 'number' || payload.exp - Date.now() / 1000 > AGENT_ASSIST_MAX_TOKEN_LIFETIME_S) {
    throw unauthorized(`Invalid JWT: its exp may be at most ${AGENT_ASSIST_MAX_TOKEN_LIFETIME_S} seconds ahead`);
  }
  // A token that names a bot must name this one.
  for (const claim of ['botId', 'appId'] as const) {
    const named = payload[claim];
    if (named !== undefined && named !== botId) throw unauthorized(`Invalid JWT: ${claim} names another bot`);
  }
  return bot;
}

/** The event id of a hook call: the body's `eventId`, else a hash of the call (a byte-identical retry is the same call). */
export function hookEventId(body: unknown, eventId: string | undefined): string {
  if (eventId) return `id:${eventId}`;
  return `sha256:${createHash('sha256').update(JSON.stringify(body)).digest('hex')}`;
}

export interface AgentAssistHookOutcome extends AgentAssistHookResult {
  eventId: string;
}

/** Hands one hook call to the conversation's workflow (started by its first call); 409 when out of order. */
export async function deliverHookCall(ctx: CoreContext, bot: AgentAssistBotDoc, conversationId: string, eventId: string, events: AgentAssistEvent[]): Promise<AgentAssistHookOutcome> {
  const workflowId = agentAssistWorkflowId(bot._id, conversationId);
  const start: AgentAssistStartInput = {
    tenantId: bot.tenantId,
    projectId: bot.projectId,
    botId: bot._id,
    conversationId,
    endedRetentionMs: AGENT_ASSIST_ENDED_RETENTION_MS,
    // The webhook push retries on the HTTP-async schedule.
    delivery: { initialIntervalMs: ctx.config.HTTP_ASYNC_RETRY_INITIAL_MS, maxIntervalMs: ctx.config.HTTP_ASYNC_RETRY_MAX_INTERVAL_MS, windowMs: ctx.config.HTTP_ASYNC_DELIVERY_WINDOW_MS },
  };
  try {
    const client = await temporalClient(ctx);
    const deadline = Date.now() + TEMPORAL_CALL_TIMEOUT_MS * 2;
    // One update id per request (kept across resends): Temporal would answer a repeated id with the
    // first call's result, unmarked; the workflow itself recognises the event id as a repeat.
    const updateId = `${eventId}#${randomUUID()}`;
    const result = await sendUpdateResendingDropped(deadline, () =>
      client.withDeadline(deadline, () =>
        client.workflow.executeUpdateWithStart(agentAssistEventUpdate, {
          args: [{ eventId, events }],
          updateId,
          startWorkflowOperation: new WithStartWorkflowOperation(AGENT_ASSIST_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
            args: [start],
            workflowIdConflictPolicy: 'USE_EXISTING',
            // An ended conversation's id is never started again while Temporal keeps it.
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            typedSearchAttributes: new TypedSearchAttributes([
              { key: TenantIdKey, value: bot.tenantId },
              { key: ProjectIdKey, value: bot.projectId },
              { key: ChannelKey, value: 'agent_assist' },
            ]),
            staticSummary: `agent_assist · ${bot._id} · ${conversationId.slice(0, 200)}`,
          }),
        }),
      ),
    );
    return { eventId, ...result };
  } catch (err) {
    for (const e of causes(err)) {
      const failure = e as { name?: string; type?: unknown; message?: string; details?: unknown[] };
      if (failure?.name === 'ApplicationFailure' && failure.type === OUT_OF_ORDER) {
        const detail = (failure.details?.[0] ?? {}) as { expected?: string[]; phase?: string };
        throw new DomainError('AGENT_ASSIST_EVENT_OUT_OF_ORDER', { message: failure.message ?? 'Event out of order', details: { expected: detail.expected ?? [], phase: detail.phase ?? null } });
      }
    }
    if (isWorkflowAlreadyStarted(err)) {
      throw new DomainError('AGENT_ASSIST_EVENT_OUT_OF_ORDER', { message: 'The conversation has ended and accepts no more events', details: { expected: [], phase: 'ended' } });
    }
    throw isDomainError(err) ? err : temporalErrorToDomainError(err, 'Agent-assist runtime');
  }
}

/** A conversation of this bot as its workflow holds it now, with what assist mode produced; 404 for one it never had (or that Temporal no longer keeps). */
export async function agentAssistConversationDetail(ctx: CoreContext, bot: AgentAssistBotDoc, conversationId: string): Promise<AgentAssistDetail> {
  const client = await temporalClient(ctx);
  try {
    return await withDeadline(client, STATE_QUERY_TIMEOUT_MS, () => client.workflow.getHandle(agentAssistWorkflowId(bot._id, conversationId)).query(agentAssistDetailQuery));
  } catch (err) {
    if (isWorkflowNotFound(err)) throw DomainError.notFound('Conversation');
    throw temporalErrorToDomainError(err, 'Agent-assist runtime');
  }
}

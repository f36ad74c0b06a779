// The agent-assist hook (`POST /agentassist/api/v1/hooks/:botId`): a contact centre's events for
// one conversation, authenticated by the bot's HS256 JWT before the body is read, mapped to the
// lifecycle events the conversation's workflow orders (core/agent-assist/hooks.ts).
import { type Request } from 'express';
import { defineRoute, type AnyRoute } from '../http/route';
import { type AppContext } from '../context';
import { consumeRateLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { ApiError } from '../../lib/errors';
import { agentAssistConversationDetail, authenticateHookCall, deliverHookCall, hookEventId } from '../../core/agent-assist/hooks';
import { type AgentAssistBotDoc } from '../../db/agent-assist-bot';
import { type AgentAssistEvent, type AgentAssistTransferType } from '../../workflows/definitions';
import { ZAgentAssistConversationParams, ZAgentAssistConversationResponse, ZAgentAssistHookBody, ZAgentAssistHookParams, ZAgentAssistHookResponse, type AgentAssistHookBody } from './schemas';

/** Where `authorize` leaves the authenticated bot for the handler. */
const BOT = Symbol('agent-assist-bot');
type WithBot = { [BOT]?: AgentAssistBotDoc };

function toEvents(body: AgentAssistHookBody): AgentAssistEvent[] {
  if (!body.events || body.events.length === 0) {
    return [{ kind: 'message', author: body.author!.type, agentId: body.agentId!, text: body.query!, language: body.language! }];
  }
  return body.events.map((e): AgentAssistEvent => {
    switch (e.name) {
      case 'INTERNAL_TRANSFER_EVENT':
        return { kind: 'transfer', transferType: e.transfertype.toUpperCase() as AgentAssistTransferType, transition: e.transition, participant: e.participant.identity };
      case 'TRIGGER_SUMMARY_EVENT':
        return { kind: 'summary', language: e.data.language, locale: e.data.locale, type: e.data.type };
      case 'END_OF_CONVERSATION':
        return { kind: 'end', reason: e.reason, participant: e.participant.identity };
    }
  });
}

/** Runs before the body is read: an unauthenticated caller gets no further than the headers. */
async function authorizeBot({ req, ctx }: { req: Request; ctx: AppContext }): Promise<void> {
  const token = req.header('auth') ?? req.header('token');
  const bot = await authenticateHookCall(ctx, String(req.params.botId ?? ''), token);
  // The bot's calls count against its tenant's limit, as the tenant's other calls do.
  await consumeRateLimit(ctx.rateLimiter, tenantRateLimitKey(bot.tenantId), req.res!);
  (req as WithBot)[BOT] = bot;
}

function authorizedBot(req: Request, botId: string): AgentAssistBotDoc {
  const bot = (req as WithBot)[BOT];
  if (!bot || bot._id !== botId) throw new ApiError('UNAUTHORIZED', 'Invalid JWT for this bot');
  return bot;
}

export const agentAssistRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/agentassist/api/v1/hooks/:botId',
    operationId: 'agentAssistHook',
    summary: 'Agent-assist conversation event (a forwarded message, or lifecycle events)',
    description:
      'Called by the contact centre. Header `auth` (or `token`): a JWT signed HS256 with the bot\'s secret (`npm run admin -- create-agent-assist-bot`), with an `exp` at most one hour ahead. ' +
      'A call without `events` is a message event; otherwise its events apply in order, all or none. An event the conversation\'s lifecycle does not accept now is refused with 409 ' +
      '`AGENT_ASSIST_EVENT_OUT_OF_ORDER`, whose `details.expected` lists what it would accept. A repeated event id changes nothing and answers `duplicate: true`. ' +
      'The answer comes once the event is recorded: the suggestions a USER message gets, and the summary TRIGGER_SUMMARY_EVENT asks for, follow on the conversation route (and the bot\'s webhook).',
    tags: ['Agent assist'],
    auth: 'public',
    params: ZAgentAssistHookParams,
    body: ZAgentAssistHookBody,
    bodyLimit: { bytes: 64 * 1024 },
    errorStatuses: [400, 401, 404, 409, 413, 429, 503],
    response: ZAgentAssistHookResponse,
    bodyExample: {
      conversationId: 'c-2f9a',
      botId: 'aab-0123456789abcdef01234567',
      events: [{ name: 'INTERNAL_TRANSFER_EVENT', transfertype: 'NA', transition: 'entry', isExtAD: false, language: 'en', experience: 'chat', participant: { identity: 'agent-1', name: 'Ada', type: 'agent' } }],
    },
    authorize: authorizeBot,
    async handler({ ctx, params, body, req }) {
      const bot = authorizedBot(req, params.botId);
      if (body.botId !== params.botId) throw new ApiError('VALIDATION_ERROR', "body.botId: must be the path's botId");
      const eventId = hookEventId(body, body.eventId);
      const outcome = await deliverHookCall(ctx, bot, body.conversationId, eventId, toEvents(body));
      return { success: true, data: { conversationId: body.conversationId, botId: bot._id, eventId, duplicate: outcome.duplicate, conversation: outcome.view } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agentassist/api/v1/hooks/:botId/conversations/:conversationId',
    operationId: 'getAgentAssistConversation',
    summary: "An agent-assist conversation: its lifecycle state, and the suggestions, next-best actions and disposition summary assist mode produced",
    description:
      "Authenticated as the hook is (the bot's JWT in `auth` or `token`). 404 for a conversation the bot never had, or one Temporal no longer keeps. " +
      'Suggestions are written after the hook has answered: a USER message gets its suggestion (tied to the message by `inReplyTo.eventId`) within the model\'s time; `assist.pending` counts the runs still to come.',
    tags: ['Agent assist'],
    auth: 'public',
    params: ZAgentAssistConversationParams,
    authorize: authorizeBot,
    errorStatuses: [400, 401, 404, 429, 503],
    response: ZAgentAssistConversationResponse,
    async handler({ ctx, params, req }) {
      const bot = authorizedBot(req, params.botId);
      const { view, insights } = await agentAssistConversationDetail(ctx, bot, params.conversationId);
      const suggestions = [...insights.suggestions].reverse();
      return {
        success: true,
        data: {
          conversationId: params.conversationId,
          botId: bot._id,
          conversation: view,
          suggestions,
          nextBestActions: suggestions[0]?.nextBestActions ?? [],
          summary: insights.summary,
          assist: { pending: insights.pending, lastError: insights.lastError, webhook: insights.webhook },
        },
      };
    },
  }),
];

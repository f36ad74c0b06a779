// POST /api/v1/chat/send: a message with attachments into an existing session. The session
// (by id, of the caller's tenant and project) decides the project; the attachments must be that
// session's. The turn is the one POST /api/v1/chat/agent runs (core/chat/turns.ts), its message
// composed with the attachments (core/attachments/message.ts).
import { z } from 'zod';
import '../openapi/registry';
import { ApiError } from '../../lib/errors';
import { canActInEnvironment } from '../../lib/permissions';
import { findTenantSession } from '../../core/sessions/read';
import { ATTACHMENT_ID_PATTERN, findSessionAttachments } from '../../core/attachments/store';
import { composeAttachmentMessage, MESSAGE_MAX_ATTACHMENTS } from '../../core/attachments/message';
import { runChatTurn } from '../../core/chat/turns';
import { defineRoute, type AnyRoute } from '../http/route';
import { readIdempotencyKey } from '../http/idempotency-key';
import { sessionMessageBudget } from '../sessions/message-budget';
import { ZSessionId } from '../sessions/schemas';
import { ZAttachmentSchema } from '../attachments/schemas';
import { ZChatAgentResponseSchema } from './schemas';
import { chatTurnResponse } from './router';

export const ZChatSendRequestSchema = z.object({
  sessionId: ZSessionId.describe('The session the message goes to (from POST /api/v1/chat/agent or POST …/sessions); an unknown one is 404'),
  message: z.string().min(1).max(32_000).describe('The user message'),
  attachmentIds: z
    .array(z.string().regex(ATTACHMENT_ID_PATTERN, 'must be an attachment id (att_…)'))
    .max(MESSAGE_MAX_ATTACHMENTS)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat an id')
    .openapi({ uniqueItems: true })
    .default([])
    .describe(`Attachments of this session (POST …/sessions/{id}/attachments), at most ${MESSAGE_MAX_ATTACHMENTS}, each once; another session's is 404`),
});

export const ZChatSendResponseSchema = ZChatAgentResponseSchema.extend({
  attachments: z.array(ZAttachmentSchema).describe('The attachments the message carried, in the order named'),
}).openapi('ChatSendResponse');

export const chatSendRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/send',
    operationId: 'sendChatMessage',
    summary: 'Send a message, with attachments, into an existing session',
    description:
      'The agent gets the message followed by one block per attachment: its name, type and size, and a text file\'s content (the first 16,000 characters of each, 48,000 of all together; docs/agent-chat-api.md). ' +
      'The list is also the turn metadata `attachments`. Send `Idempotency-Key` to make a retried message count once. ' +
      "An embedded widget may send `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it sends only into sessions its end user started (another end user's, another project's or environment's is 404).",
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    body: ZChatSendRequestSchema,
    bodyExample: { sessionId: '8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b', message: 'Here is my invoice', attachmentIds: ['att_tz4a98xxat96iws9zmbrgj3a'] },
    errorStatuses: [404, 409, 410, 429, 503],
    alsoSuccess: [202],
    response: ZChatSendResponseSchema,
    async handler({ ctx, principal, body, req, res }) {
      const idempotencyKey = readIdempotencyKey(req);
      const session = await findTenantSession(ctx.models, principal, body.sessionId);
      if (!canActInEnvironment(principal, session.environment)) throw ApiError.notFound('Session');
      const docs = await findSessionAttachments(ctx.models, { tenantId: principal.tenantId, sessionId: session._id }, body.attachmentIds);
      const { message, attachments } = await composeAttachmentMessage(ctx.models, body.message, docs);
      const result = await runChatTurn(ctx, {
        principal,
        project: { _id: session.projectId, tenantId: session.tenantId },
        body: {
          projectId: session.projectId,
          sessionId: session._id,
          message,
          ...(attachments.length > 0 ? { metadata: { attachments } } : {}),
        },
        idempotencyKey,
        budget: sessionMessageBudget(ctx, res),
      });
      return { ...chatTurnResponse(result, res), attachments };
    },
  }),
];

// POST /api/v1/chat/agent: run one message through a project's agents (its streamed form,
// POST /api/v1/chat/agent/stream, is in stream.ts; both share turn.ts).
import { defineRoute, type AnyRoute } from '../http/route';
import { sessionLinks } from '../sessions/router';
import { ZChatAgentRequestSchema, ZChatAgentResponseSchema } from './schemas';
import { refundSessionCharge, runChatTurn } from '../../core/chat/turns';
import { type Response } from 'express';
import { type TurnResult } from '../../workflows/definitions';
import { chatTurnAnswer, chatTurnOptions, chatTurnPreload } from './turn';
import { streamChatAgentRoutes } from './stream';

export const chatAgentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/agent',
    operationId: 'chatWithAgent',
    summary: "Send a message to a project's agents",
    description:
      'Creates a session on the first message (omit sessionId) or continues one. Send `Idempotency-Key` to make a retried message count once: the same key returns the same answer (and, for a first message, the same session). ' +
      "An embedded widget sends `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it continues only sessions it started (another end user's is 404), in the public key's project and environment. " +
      'To receive the reply as it is generated, use `POST /api/v1/chat/agent/stream`.',
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    body: ZChatAgentRequestSchema,
    links: sessionLinks('$request.body#/projectId', '$response.body#/sessionId'),
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x', message: 'I have a question about my invoice' },
    errorStatuses: [404, 409, 410, 429, 503],
    alsoSuccess: [202],
    response: ZChatAgentResponseSchema,
    preload: chatTurnPreload,
    onRefused: ({ existing }) => refundSessionCharge(existing),
    async handler(input) {
      const result = await runChatTurn(input.ctx, chatTurnOptions(input));
      return chatTurnResponse(result, input.res);
    },
  }),
  ...streamChatAgentRoutes,
];

/** The answer to a chat turn (POST /api/v1/chat/agent, POST /api/v1/chat/send); 202 when it suspended. */
export function chatTurnResponse(result: TurnResult, res: Response) {
  const { status, body } = chatTurnAnswer(result);
  if (status !== 200) res.status(status);
  return body;
}

// LLM completion endpoints: POST /api/v1/chat/complete, POST /api/v1/chat/stream (SSE) and
// GET /api/v1/chat/usage. Calling a provider from the API is DESIGN.md's one exception.
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { lookUpCall } from '../../core/completions/call';
import { completeChat } from './complete';
import { lookUpStreamCall, streamChat } from './stream';
import { projectUsage } from '../../core/completions/usage';
import {
  ZChatCompleteResponseSchema,
  ZChatRequestSchema,
  ZChatStreamResponseSchema,
  ZChatUsageQuerySchema,
  ZChatUsageResponseSchema,
} from './schemas';

const CHAT_EXAMPLE = {
  projectId: 'jqmvff06cp7cvm69y75r2r1x',
  messages: [
    { role: 'system', content: 'You answer in one sentence.' },
    { role: 'user', content: 'What is a durable workflow?' },
  ],
  tier: 'fast',
  maxTokens: 200,
};

export const chatRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/complete',
    operationId: 'completeChat',
    summary: 'One LLM completion in one payload',
    description:
      'Resolves the model (modelId > tier > project default > balanced tier) and the credentials (project > platform), calls the provider and records the usage. Needs `session:execute`.',
    tags: ['Chat'],
    auth: 'session:execute',
    body: ZChatRequestSchema,
    bodyExample: CHAT_EXAMPLE,
    response: ZChatCompleteResponseSchema,
    errorStatuses: [404, 503, 504],
    preload: ({ ctx, principal, body }) => lookUpCall(ctx, principal, body),
    handler: ({ ctx, principal, body, res, preloaded }) => completeChat(ctx, principal, body, res, preloaded),
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/stream',
    operationId: 'streamChat',
    summary: 'One LLM completion streamed as Server-Sent Events',
    description:
      'Same body as /chat/complete. Errors before the stream opens are JSON envelopes; afterwards a failure is an `error` event followed by the end of the stream. Needs `session:execute`.',
    tags: ['Chat'],
    auth: 'session:execute',
    body: ZChatRequestSchema,
    bodyExample: CHAT_EXAMPLE,
    response: ZChatStreamResponseSchema,
    responseContentType: 'text/event-stream',
    errorStatuses: [404, 503],
    // Starts the upstream call while the key is confirmed and the tenant charged; see lookUpStreamCall.
    preload: ({ ctx, principal, body, signal }) => lookUpStreamCall(ctx, principal, body, signal),
    async handler({ ctx, principal, body, req, res, preloaded }) {
      await streamChat(ctx, principal, body, req, res, preloaded);
      return RESPONSE_SENT;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/chat/usage',
    operationId: 'getChatUsage',
    summary: 'LLM usage of a project: totals and, with groupBy=model, a per-model breakdown',
    tags: ['Chat'],
    auth: 'session:read',
    query: ZChatUsageQuerySchema,
    response: ZChatUsageResponseSchema,
    errorStatuses: [404],
    handler: async ({ ctx, principal, query }) => ({ success: true as const, ...(await projectUsage(ctx, principal, query)) }),
  }),
];

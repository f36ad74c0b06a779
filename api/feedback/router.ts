// POST /api/v1/feedback: a rating of one of a session's agent replies (docs/agent-chat-api.md,
// "Feedback"), recorded as an analytics event of category `feedback` (core/feedback/feedback.ts).
import { z } from 'zod';
import '../openapi/registry';
import { ApiError } from '../../lib/errors';
import { canActInEnvironment } from '../../lib/permissions';
import { findTenantSession, flushSessionProjection } from '../../core/sessions/read';
import { FEEDBACK_COMMENT_MAX_CHARS, findRatedMessage, recordFeedback, type FeedbackRating } from '../../core/feedback/feedback';
import { defineRoute, type AnyRoute } from '../http/route';
import { ZSessionId } from '../sessions/schemas';

export const ZFeedbackRequestSchema = z.object({
  sessionId: ZSessionId,
  messageId: z
    .string()
    .min(1)
    .max(200)
    // eslint-disable-next-line no-control-regex -- control characters are what this refuses
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
    .describe("An agent reply's transcript message id (`id` in GET /api/v1/sessions/{id}/transcripts); another session's is 404"),
  rating: z
    .union([z.enum(['up', 'down']), z.number().int().min(1).max(5)])
    .describe('`up`, `down`, or an integer from 1 (worst) to 5 (best)'),
  comment: z.string().max(FEEDBACK_COMMENT_MAX_CHARS).optional().describe(`At most ${FEEDBACK_COMMENT_MAX_CHARS} characters; blank is none`),
});

const ZFeedbackSchema = z
  .object({
    id: z.string().describe('`<sessionId>:fb:<messageId>`: the analytics event (category feedback, event_type feedback.submitted)'),
    sessionId: z.string(),
    messageId: z.string(),
    rating: z.union([z.enum(['up', 'down']), z.number()]),
    score: z.number().describe('The rating from 0 (worst) to 1 (best): down 0, up 1, n stars (n - 1) / 4'),
    comment: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('Feedback');

export const ZFeedbackResponseSchema = z.object({ success: z.literal(true), feedback: ZFeedbackSchema }).openapi('FeedbackResponse');

export const feedbackRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/feedback',
    operationId: 'submitFeedback',
    summary: "Rate one of a session's agent replies",
    description:
      'A reply is rated once: 201 for the first rating, 200 when the same rating and comment are sent again (a safe retry), 409 for a different one. ' +
      'Only an agent reply (role `assistant`) can be rated (400 otherwise). ' +
      "An embedded widget may send `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it rates only replies of sessions its end user started (another end user's, another project's or environment's is 404).",
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    body: ZFeedbackRequestSchema,
    bodyExample: { sessionId: '8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b', messageId: '8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b:m2', rating: 'up', comment: 'Quick and right' },
    // 200 unless the handler says 201 (a first rating).
    alsoSuccess: [201],
    errorStatuses: [404, 409],
    response: ZFeedbackResponseSchema,
    async handler({ ctx, principal, body, res }) {
      const session = await findTenantSession(ctx.models, principal, body.sessionId);
      if (!canActInEnvironment(principal, session.environment)) throw ApiError.notFound('Session');
      let message = await findRatedMessage(ctx.models, session, body.messageId);
      // A reply the running session still holds is written first (its id may come from a read that did so).
      if (!message && session.status !== 'ended' && (await flushSessionProjection(ctx, session)) === 'written') {
        message = await findRatedMessage(ctx.models, session, body.messageId);
      }
      if (!message) throw ApiError.notFound('Message');
      if (message.role !== 'assistant') throw new ApiError('VALIDATION_ERROR', 'body.messageId: only an agent reply can be rated');
      const { feedback, created } = await recordFeedback(ctx.models, { session, messageId: message._id, rating: body.rating as FeedbackRating, comment: body.comment }, message.agent);
      if (created) res.status(201);
      return { success: true, feedback };
    },
  }),
];

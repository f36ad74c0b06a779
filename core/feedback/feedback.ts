// Feedback on an agent's reply: a rating (thumbs `up`/`down`, or 1-5 stars) and an optional
// comment, recorded as one analytics event of category `feedback` (core/analytics/ingest.ts),
// whose id is `<sessionId>:fb:<messageId>`: a message is rated once. The same rating sent again
// is answered as the first (a safe retry); a different one for a message already rated is 409.
import { type Models } from '../../db/models';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { type SessionDoc } from '../../db/session';
import { findOwned } from '../../db/owned';
import { DomainError } from '../../lib/errors';
import { recordAnalyticsEvents } from '../analytics/ingest';

export type FeedbackRating = 'up' | 'down' | 1 | 2 | 3 | 4 | 5;

/** Longest comment kept. */
export const FEEDBACK_COMMENT_MAX_CHARS = 2000;

/** The rating on one scale, 0 (worst) to 1 (best): `down` 0, `up` 1, n stars (n - 1) / 4. */
export function feedbackScore(rating: FeedbackRating): number {
  if (rating === 'up') return 1;
  if (rating === 'down') return 0;
  return (rating - 1) / 4;
}

export interface FeedbackInput {
  session: Pick<SessionDoc, '_id' | 'tenantId' | 'projectId' | 'agentName' | 'channel'>;
  messageId: string;
  rating: FeedbackRating;
  comment?: string;
}

export interface FeedbackView {
  id: string;
  sessionId: string;
  messageId: string;
  rating: FeedbackRating;
  score: number;
  comment: string | null;
  createdAt: string;
}

export const feedbackEventId = (sessionId: string, messageId: string) => `${sessionId}:fb:${messageId}`;

function present(doc: AnalyticsEventDoc): FeedbackView {
  const m = doc.metadata as { messageId: string; rating: FeedbackRating; score: number; comment?: string };
  return { id: doc._id, sessionId: doc.sessionId!, messageId: m.messageId, rating: m.rating, score: m.score, comment: m.comment ?? null, createdAt: doc.timestamp.toISOString() };
}

/** The agent reply being rated, of this session; null when there is none. */
export async function findRatedMessage(models: Models, session: FeedbackInput['session'], messageId: string) {
  return findOwned(models.TranscriptMessage, messageId, { tenantId: session.tenantId, sessionId: session._id });
}

/**
 * Records the feedback (the message must be the session's agent reply, checked by the caller
 * with findRatedMessage). `created` false: the same feedback was already there.
 */
export async function recordFeedback(models: Models, input: FeedbackInput, agent: string | null): Promise<{ feedback: FeedbackView; created: boolean }> {
  const { session, messageId, rating } = input;
  const id = feedbackEventId(session._id, messageId);
  const comment = input.comment?.trim() ? input.comment.trim() : undefined;
  const score = feedbackScore(rating);
  const timestamp = new Date();
  await recordAnalyticsEvents(models, [
    {
      id,
      tenantId: session.tenantId,
      projectId: session.projectId,
      category: 'feedback',
      eventType: 'feedback.submitted',
      agentName: agent ?? session.agentName,
      sessionId: session._id,
      channel: session.channel,
      timestamp,
      metadata: { messageId, rating, score, ...(comment !== undefined ? { comment } : {}) },
    },
  ]);
  // A duplicate id is skipped by the write: what is stored says whether this one was first.
  const stored = await findOwned(models.AnalyticsEvent, id, { tenantId: session.tenantId });
  if (!stored) throw new DomainError('INTERNAL_ERROR', 'The feedback was not recorded');
  const view = present(stored);
  const created = stored.timestamp.getTime() === timestamp.getTime() && view.rating === rating && view.comment === (comment ?? null);
  if (!created && (view.rating !== rating || view.comment !== (comment ?? null))) {
    throw new DomainError('CONFLICT', 'This message already has feedback; a message is rated once');
  }
  return { feedback: view, created };
}

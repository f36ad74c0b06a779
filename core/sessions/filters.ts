// Which sessions a cross-session read (generations, export) may cover: the caller's tenant and
// project, one named session, and for a key bound to environments only sessions of those.
import { type FilterQuery } from 'mongoose';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { type SessionDoc } from '../../db/session';
import { DomainError } from '../../lib/errors';
import { sessionNotFound } from './read';
import { type SessionScope } from './scope';

/**
 * An environment-bound key reads trace events through the ids of its sessions; a request that
 * would cover more sessions than this is refused (400) and asks for a narrower window.
 */
export const MAX_ENVIRONMENT_SESSIONS = 10_000;

export interface SessionWindow {
  /** Events at or after / at or before (trace event timestamps). */
  from?: Date;
  to?: Date;
  sessionId?: string;
}

/** The time filter on trace event timestamps. */
export function timestampFilter(window: SessionWindow): Record<string, unknown> {
  if (!window.from && !window.to) return {};
  return { timestamp: { ...(window.from ? { $gte: window.from } : {}), ...(window.to ? { $lte: window.to } : {}) } };
}

/**
 * Sessions that may hold events in the window: created by its end, and active at or after its
 * start (every event of a session is stamped at or before its lastActivityAt, or its endedAt for
 * the events of its end).
 */
export function sessionsInWindow(window: SessionWindow): FilterQuery<SessionDoc> {
  return {
    ...(window.to ? { createdAt: { $lte: window.to } } : {}),
    ...(window.from ? { $or: [{ lastActivityAt: { $gte: window.from } }, { endedAt: { $gte: window.from } }] } : {}),
  };
}

/** A `sessionId` filter names a session of the scope (and of the key's environments), else 404. */
export async function requireListedSession(models: Models, scope: SessionScope, sessionId: string, environments?: readonly string[] | null): Promise<SessionDoc> {
  const session = await findOwned(models.Session, sessionId, scope);
  if (!session || (environments?.length && !environments.includes(session.environment))) throw sessionNotFound();
  return session;
}

/**
 * The trace-event filter on sessions: the named session, or for an environment-bound key the ids
 * of its environments' sessions in the window (at most MAX_ENVIRONMENT_SESSIONS, else 400), or
 * nothing (the scope alone).
 */
export async function traceSessionFilter(
  models: Models,
  scope: SessionScope,
  window: SessionWindow,
  environments?: readonly string[] | null,
): Promise<Record<string, unknown>> {
  if (window.sessionId) {
    await requireListedSession(models, scope, window.sessionId, environments);
    return { sessionId: window.sessionId };
  }
  if (!environments?.length) return {};
  const ids = await models.Session.find({ ...scope, environment: { $in: [...environments] }, ...sessionsInWindow(window) })
    .select({ _id: 1 })
    .limit(MAX_ENVIRONMENT_SESSIONS + 1)
    .lean();
  if (ids.length > MAX_ENVIRONMENT_SESSIONS) {
    throw new DomainError(
      'VALIDATION_ERROR',
      `This key is bound to environments and the window covers more than ${MAX_ENVIRONMENT_SESSIONS} sessions: narrow it with from and to, or name a sessionId`,
    );
  }
  return { sessionId: { $in: ids.map((s) => s._id) } };
}

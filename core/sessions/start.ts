// Starting a session: its place in the tenant's count, its summary record, then its AgentSession
// workflow. `startSession` is the one way a session is created and started (the sessions route,
// agentic apps, HTTP-async conversations; telephony webhooks and the widget SDK call it too); the
// first chat turn instead starts the workflow with its first update (core/chat/turns.ts), from the
// same building blocks.
import { randomUUID } from 'node:crypto';
import { type Client } from '@temporalio/client';
import { type Models } from '../../db/models';
import { isDuplicateKey } from '../../db/duplicate-key';
import { acquireSessionSlot, releaseSessionSlot } from '../../db/session-capacity';
import { type SessionDoc } from '../../db/session';
import { type Config } from '../../lib/config';
import { DomainError } from '../../lib/errors';
import { type SessionChannel, type SessionContact, type SessionStartInput } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { findSessionContact, linkSessionToContact, type SessionCaller, unlinkSession } from '../contacts/linking';
import {
  AGENT_SESSION_WORKFLOW_TYPE,
  type AgentSessionWorkflow,
  isNamespaceMissing,
  isWorkflowAlreadyStarted,
  isWorkflowNotFound,
  sessionStartOptions,
  sessionWorkflowId,
  TEMPORAL_CALL_TIMEOUT_MS,
  temporalClient,
  temporalErrorToDomainError,
  withDeadline,
} from './workflow-client';

export interface NewSessionInput {
  tenantId: string;
  projectId: string;
  agentId: string | null;
  agentName: string;
  channel: SessionChannel;
  /** @default 'dev' */
  environment?: string;
  /** @default null */
  deploymentId?: string | null;
  /** @default a fresh UUID */
  sessionId?: string;
  /** The HTTP-async conversation the session answers for. */
  httpAsync?: SessionStartInput['httpAsync'];
  /** Who the session's user is on its channel, for the analytics filters (never in workflow input). */
  identity?: SessionIdentity;
  /**
   * Who the caller is, when the channel knows (core/contacts/linking.ts names it per channel):
   * startSession finds or creates their contact and links the session to it. Never in workflow input.
   */
  caller?: SessionCaller | null;
  /** The contact the caller's identity found, as the workflow carries it (set by startSession or the first chat turn). */
  contact?: SessionContact | null;
}

/** The end user's channel identity and a call's caller-number blind index, kept on the session's record. */
export interface SessionIdentity {
  channelUId?: string | null;
  callerNumberIndex?: string | null;
}

/** The AgentSession's start input: a new session id, idle timeout from config, bundle by deployment or latest versions. */
export function buildSessionStartInput(config: Pick<Config, 'SESSION_IDLE_TIMEOUT_MS' | 'SESSION_MAX_HISTORY_EVENTS' | 'SESSION_PROJECTION_FLUSH_MS'>, input: NewSessionInput): SessionStartInput {
  const deploymentId = input.deploymentId ?? null;
  return {
    sessionId: input.sessionId ?? randomUUID(),
    tenantId: input.tenantId,
    projectId: input.projectId,
    agentName: input.agentName,
    agentId: input.agentId,
    channel: input.channel,
    environment: input.environment ?? 'dev',
    deploymentId,
    bundleRef: deploymentId ? { kind: 'deployment', deploymentId } : { kind: 'latest_versions' },
    idleTimeoutMs: config.SESSION_IDLE_TIMEOUT_MS,
    maxHistoryEvents: config.SESSION_MAX_HISTORY_EVENTS,
    projectionFlushMs: config.SESSION_PROJECTION_FLUSH_MS,
    ...(input.httpAsync ? { httpAsync: input.httpAsync } : {}),
    ...(input.contact ? { contact: input.contact } : {}),
  };
}

/**
 * The caller's contact, found or created (null without a caller, or when linking failed: the
 * session starts without one). Never rejects, so a start can run it beside its own writes.
 */
export function sessionContactFor(ctx: CoreContext, input: Pick<NewSessionInput, 'tenantId' | 'channel' | 'caller'>, sessionId: string): Promise<SessionContact | null> {
  if (!input.caller) return Promise.resolve(null);
  return findSessionContact(ctx, { tenantId: input.tenantId, channel: input.channel, sessionId, ...input.caller });
}

/** Lists the session under its contact (a no-op without one); failures are logged, never thrown. */
export function linkStartedSession(ctx: CoreContext, start: SessionStartInput): Promise<void> {
  if (!start.contact) return Promise.resolve();
  return linkSessionToContact(ctx, { tenantId: start.tenantId, contactId: start.contact.contactId, sessionId: start.sessionId });
}

/**
 * Writes the session's summary document (status `active`, zero counters). It must exist before
 * the workflow's first turn: the turn activity updates it and never upserts.
 */
export async function createSessionRecord(models: Models, start: SessionStartInput, now: Date = new Date(), identity: SessionIdentity = {}): Promise<SessionDoc> {
  const doc = await models.Session.create({
    _id: start.sessionId,
    tenantId: start.tenantId,
    projectId: start.projectId,
    agentId: start.agentId,
    agentName: start.agentName,
    currentAgent: start.agentName,
    status: 'active',
    runtimeStatus: 'active',
    channel: start.channel,
    environment: start.environment,
    deploymentId: start.deploymentId,
    runtimeSessionId: sessionWorkflowId(start.sessionId),
    createdAt: now,
    lastActivityAt: now,
    containmentType: 'contained',
    analyticsStatus: 'active',
    channelUId: identity.channelUId ?? null,
    callerNumberIndex: identity.callerNumberIndex ?? null,
  });
  return doc.toObject();
}

/**
 * Removes a session record written for a workflow that never started, with its contact link, and
 * gives its place in the tenant's active-session count back.
 */
export async function discardSessionRecord(models: Models, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  await Promise.all([
    models.Session.deleteOne({ _id: start.sessionId, tenantId: start.tenantId }),
    models.ContactSession.deleteMany({ tenantId: start.tenantId, sessionId: start.sessionId }),
  ]);
  await releaseSessionSlot(models, start, 'give_back');
}

export interface StartedSession {
  session: SessionDoc;
  start: SessionStartInput;
  runId: string | null;
}

/**
 * Counts a new session against the tenant's MAX_CONCURRENT_SESSIONS (db/session-capacity.ts):
 * 429 "Concurrent session limit exceeded" when that many are active. Every way of starting a
 * session claims its place before writing the session record; a start that fails afterwards
 * gives it back. 'already_held': a concurrent start of the same session id claimed it.
 */
export async function claimSessionCapacity(ctx: CoreContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<'acquired' | 'already_held'> {
  const outcome = await acquireSessionSlot(ctx.models, { ...start, cap: ctx.config.MAX_CONCURRENT_SESSIONS });
  if (outcome === 'full') {
    throw new DomainError('RATE_LIMIT_EXCEEDED', {
      message: 'Concurrent session limit exceeded',
      retryAfterMs: 60_000,
    });
  }
  return outcome;
}

/** Gives a claimed place back after a start failed before writing its record. */
export async function releaseSessionCapacity(ctx: CoreContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  await releaseSessionSlot(ctx.models, start, 'give_back').catch((err: unknown) =>
    ctx.logger.warn({ err, sessionId: start.sessionId }, 'could not give back the capacity of an unstarted session; the reconciliation will'),
  );
}

/**
 * After a failed first turn: a session whose workflow never started gives its record and its
 * place back. One whose workflow did start keeps both, and gives its place back when it ends.
 * When Temporal cannot say, both stay (the record remains listed as active).
 */
export async function giveBackUnstartedSession(ctx: CoreContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  try {
    const client = await ctx.temporal.client();
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(sessionWorkflowId(start.sessionId)).describe());
  } catch (err) {
    // No such workflow, or no such namespace: nothing was started either way.
    if (!isWorkflowNotFound(err) && !isNamespaceMissing(err)) {
      ctx.logger.warn({ err, sessionId: start.sessionId }, 'could not tell whether a failed first turn started its session; it stays counted');
      return;
    }
    await discardSessionRecord(ctx.models, start).catch((cleanupErr: unknown) =>
      ctx.logger.warn({ err: cleanupErr, sessionId: start.sessionId }, 'could not remove the record of an unstarted session'),
    );
  }
}

export interface StartSessionOptions {
  /**
   * A start that may run again with the same session id (a retried activity): a record or a
   * workflow the earlier attempt made is taken as this start's own, a failure before the workflow
   * keeps the claimed place for the next attempt, and Temporal's own error is passed on as it is
   * (so the activity retries). Without it an existing session is 409 and Temporal trouble 503.
   */
  retrySafe?: boolean;
}

/**
 * Creates and starts a session: its place in the tenant's count (429 at MAX_CONCURRENT_SESSIONS),
 * the summary record, then the AgentSession workflow (`session/<id>`, conflict policy FAIL,
 * search attributes). When the workflow does not start, the record is removed again and the
 * place given back, so no session is listed without a workflow; Temporal down or silent → 503.
 * `runId` is null when a retried start found the workflow already running.
 */
export async function startSession(ctx: CoreContext, input: NewSessionInput, options: StartSessionOptions = {}): Promise<StartedSession> {
  const retrySafe = options.retrySafe ?? false;
  const sessionId = input.sessionId ?? randomUUID();
  // The caller's contact is found while the session's place is claimed: one round trip, not two.
  const [contact] = await Promise.all([sessionContactFor(ctx, input, sessionId), claimSessionCapacity(ctx, { tenantId: input.tenantId, sessionId })]);
  const start = buildSessionStartInput(ctx.config, { ...input, sessionId, contact });
  let client: Client;
  let session: SessionDoc;
  // The link is written beside the record (it never rejects).
  let linking: Promise<void> = Promise.resolve();
  try {
    client = await temporalClient(ctx);
    linking = linkStartedSession(ctx, start);
    session = retrySafe ? await createOrFindSessionRecord(ctx.models, start, input.identity) : await createSessionRecord(ctx.models, start, new Date(), input.identity);
    await linking;
  } catch (err) {
    // No record: the link is taken back once it has landed.
    await linking;
    if (start.contact) await unlinkSession(ctx, { tenantId: start.tenantId, contactId: start.contact.contactId, sessionId: start.sessionId });
    if (!retrySafe) await releaseSessionCapacity(ctx, start);
    throw err;
  }
  try {
    const startWorkflow = () => client.workflow.start<AgentSessionWorkflow>(AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions(ctx.config, start));
    // A caller's request waits TEMPORAL_CALL_TIMEOUT_MS at most; an activity has its own timeout.
    const handle = retrySafe ? await startWorkflow() : await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, startWorkflow);
    return { session, start, runId: handle.firstExecutionRunId };
  } catch (err) {
    // An earlier attempt of this start got as far as the workflow.
    if (retrySafe && isWorkflowAlreadyStarted(err)) return { session, start, runId: null };
    await discardSessionRecord(ctx.models, start).catch((cleanupErr: unknown) =>
      ctx.logger.warn({ err: cleanupErr, sessionId: start.sessionId }, 'could not remove the record of an unstarted session'),
    );
    if (retrySafe) throw err;
    if (isWorkflowAlreadyStarted(err)) throw new DomainError('CONFLICT', { message: 'A session with this id already exists', cause: err });
    throw temporalErrorToDomainError(err);
  }
}

/** createSessionRecord, or the record an earlier attempt of the same start wrote. */
async function createOrFindSessionRecord(models: Models, start: SessionStartInput, identity?: SessionIdentity): Promise<SessionDoc> {
  try {
    return await createSessionRecord(models, start, new Date(), identity);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const earlier = await models.Session.findOne({ _id: start.sessionId, tenantId: start.tenantId }).lean();
    if (!earlier) throw err;
    return earlier;
  }
}

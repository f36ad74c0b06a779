// Agentic-app sessions: find-or-create by identity (docs/agentic-app-sessions.md "How a session is
// found"), list, detail and terminate. An app session is a core session (db/session.ts) with its
// AgentSession workflow, channel `api`, plus the app record (db/app-session.ts) holding the
// caller's references, the source and the run status. Every query carries tenant and project.
// The routes and their response shapes are api/agentic-apps/.
import { randomUUID } from 'node:crypto';
import { type AppSessionDoc, type AppSessionSource } from '../../db/app-session';
import { type SessionDoc } from '../../db/session';
import { sha256Hex } from '../../lib/crypto';
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { type CoreContext } from '../context';
import { findVisibleProject } from '../projects/visible';
import { forgetRunningSession } from '../sessions/running-sessions';
import { endSessionWorkflow } from '../sessions/end';
import { findCurrentSession } from '../sessions/read';
import { resolveNewSessionTarget } from '../sessions/target';
import { startSession } from '../sessions/start';
import { appUserCaller } from '../contacts/linking';
import { sendUpdateResendingDropped, sessionWorkflowId, temporalClient } from '../sessions/workflow-client';
import { turnUpdate, type TurnUpdateInput } from '../../workflows/definitions';

/** `s-<uuid>` as shown, or the bare UUID the core session routes use. */
export const APP_SESSION_ID_PATTERN = /^(s-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** The filters of the session list (its request body, api/agentic-apps/schemas.ts). */
export interface AppSessionListFilter {
  env_name?: string;
  start_time?: string;
  end_time?: string;
  user_reference_id?: string;
  session_reference_id?: string;
}

export interface AppScope {
  tenantId: string;
  projectId: string;
  environment: string;
}

/** The app (a project) if the key may see it; another tenant's or project's is 404. */
export async function loadApp(ctx: CoreContext, principal: Principal, appId: string) {
  const project = await findVisibleProject(ctx, principal, appId);
  if (!project) throw new ApiError('NOT_FOUND', 'App not found');
  return project;
}

export interface ParsedIdentity {
  sessionId?: string;
  sessionReference?: string;
  userReference?: string;
}

/** What an identity holds for a session id that cannot be one of ours: it matches no record. */
const NO_SESSION = 'none';

/** `s-<uuid>` or `<uuid>` → the core session id. */
export const coreSessionId = (id: string): string => id.replace(/^s-/, '').toLowerCase();

export function parseIdentity(items: readonly { type: string; value: string }[]): ParsedIdentity {
  const parsed: ParsedIdentity = {};
  const seen = new Set<string>();
  for (const { type, value } of items) {
    // The first item of each type counts; a repeated type is ignored.
    if (seen.has(type)) continue;
    seen.add(type);
    if (type === 'sessionIdentity' || type === 'sessionId') {
      // A value that is not an id this service issued names no session (404, or not_found on terminate).
      parsed.sessionId = APP_SESSION_ID_PATTERN.test(value) ? coreSessionId(value) : NO_SESSION;
    } else if (type === 'sessionReference') parsed.sessionReference = value;
    else if (type === 'userReference') parsed.userReference = value;
  }
  return parsed;
}

const keyHash = (scope: AppScope, value: string) => sha256Hex(`${scope.tenantId}\n${scope.projectId}\n${scope.environment}\n${value}`).slice(0, 40);
const liveKey = (scope: AppScope, kind: 'ref' | 'user', value: string) => `${kind}:${keyHash(scope, value)}`;

/** `u-…`: the same for a userReference across the app's sessions and environments. */
export function userIdFor(scope: Pick<AppScope, 'tenantId' | 'projectId'>, userReference: string | null): string {
  return userReference ? `u-${sha256Hex(`${scope.tenantId}\n${scope.projectId}\n${userReference}`).slice(0, 32)}` : `u-${randomUUID().replace(/-/g, '')}`;
}

const sessionNotFound = () => new ApiError('NOT_FOUND', 'Session not found');

/** Frees an app session's live key: its conversation has ended, so the identity starts a new one. */
async function retire(ctx: CoreContext, session: AppSessionDoc, at: Date): Promise<AppSessionDoc> {
  const set = { terminatedAt: session.terminatedAt ?? at, liveKey: `terminated:${session._id}`, activeRuns: 0 };
  await ctx.models.AppSession.updateOne({ _id: session._id, tenantId: session.tenantId }, { $set: set });
  return { ...session, ...set };
}

/**
 * A live app session found by key, or null. One whose conversation ended on its own (idle
 * timeout, COMPLETE, deletion) is retired on the way, so its identity starts a new session.
 */
async function liveSession(ctx: CoreContext, found: AppSessionDoc | null): Promise<AppSessionDoc | null> {
  if (!found || found.terminatedAt) return null;
  const core = await ctx.models.Session.findOne({ _id: found._id, tenantId: found.tenantId }).select({ status: 1, endedAt: 1 }).lean();
  if (core && core.status !== 'ended') return found;
  await retire(ctx, found, core?.endedAt ?? new Date());
  return null;
}

async function findExisting(ctx: CoreContext, scope: AppScope, identity: ParsedIdentity): Promise<AppSessionDoc | null> {
  const owned = { tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment };
  if (identity.sessionReference) {
    const found = await liveSession(ctx, await ctx.models.AppSession.findOne({ ...owned, liveKey: liveKey(scope, 'ref', identity.sessionReference) }).lean());
    if (found && identity.userReference && found.userReference && found.userReference !== identity.userReference) {
      throw new ApiError('CONFLICT', 'This sessionReference belongs to another userReference');
    }
    return found;
  }
  if (identity.userReference) {
    const recent = await ctx.models.AppSession.find({ ...owned, userReference: identity.userReference, terminatedAt: null }).sort({ createdAt: -1 }).limit(5).lean();
    for (const candidate of recent) {
      const live = await liveSession(ctx, candidate);
      if (live) return live;
    }
  }
  return null;
}

export interface ResolvedAppSession {
  session: AppSessionDoc;
  created: boolean;
  /** What the entry agent said when a new session started ('' when it said nothing, or for a found session). */
  greeting: string;
}

/**
 * Finds or creates the session an identity names: a session id must exist in this app and
 * environment (404); a sessionReference finds its live session, else starts one; a userReference
 * alone finds the user's most recent live session, else starts one; no identity starts one.
 */
export async function findOrCreateAppSession(ctx: CoreContext, scope: AppScope, identity: ParsedIdentity, source: AppSessionSource): Promise<ResolvedAppSession> {
  if (identity.sessionId) {
    const session = await ctx.models.AppSession.findOne({ _id: identity.sessionId, tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment }).lean();
    if (!session) throw sessionNotFound();
    return { session: session.terminatedAt ? session : ((await liveSession(ctx, session)) ?? (await readApp(ctx, scope, session._id))), created: false, greeting: '' };
  }
  const existing = await findExisting(ctx, scope, identity);
  if (existing) return { session: existing, created: false, greeting: '' };

  // What the session runs is resolved before anything is written: a missing deployment is a 404 with nothing to undo.
  const { agent, deployment } = await resolveNewSessionTarget(ctx.models, { tenantId: scope.tenantId, projectId: scope.projectId }, { environment: scope.environment });
  const sessionId = randomUUID();
  const key = identity.sessionReference
    ? liveKey(scope, 'ref', identity.sessionReference)
    : identity.userReference
      ? liveKey(scope, 'user', identity.userReference)
      : `new:${sessionId}`;
  const record: AppSessionDoc = {
    _id: sessionId,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    environment: scope.environment,
    sessionReference: identity.sessionReference ?? null,
    userReference: identity.userReference ?? null,
    userId: userIdFor(scope, identity.userReference ?? null),
    source,
    liveKey: key,
    activeRuns: 0,
    lastRunFailed: false,
    terminatedAt: null,
    createdAt: new Date(),
  };
  try {
    await ctx.models.AppSession.create(record);
  } catch (err) {
    // A concurrent create with the same identity won: its session is this one.
    if ((err as { code?: number }).code !== 11000) throw err;
    const winner = await ctx.models.AppSession.findOne({ tenantId: scope.tenantId, projectId: scope.projectId, liveKey: key }).lean();
    if (!winner) throw new ApiError('CONFLICT', 'A session with this identity is being created; retry');
    return { session: winner, created: false, greeting: '' };
  }
  try {
    await startSession(ctx, {
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      ...agent,
      channel: 'api',
      environment: deployment?.environment ?? scope.environment,
      deploymentId: deployment?._id ?? null,
      sessionId,
      identity: { channelUId: record.userId },
      caller: appUserCaller(identity.userReference),
    });
  } catch (err) {
    await ctx.models.AppSession.deleteOne({ _id: sessionId, tenantId: scope.tenantId }).catch(() => undefined);
    throw err;
  }
  return { session: record, created: true, greeting: await greet(ctx, sessionId) };
}

/**
 * Starts a new session's conversation without a user message (ON_START and the first flow
 * step) and returns what the entry agent said, the create response's Welcome_Event. A greeting
 * that fails is logged and left out: the session exists, and its first run starts it instead.
 */
async function greet(ctx: CoreContext, sessionId: string): Promise<string> {
  try {
    const client = await temporalClient(ctx);
    const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
    const updateId = `welcome-${sessionId}`;
    const turn: TurnUpdateInput = { clientMessageId: updateId, retryable: true, message: '', startOnly: true };
    // A synchronous call into the session's workflow, bounded like the others (REQUEST_TIMEOUT_MS).
    const deadline = Date.now() + ctx.config.REQUEST_TIMEOUT_MS;
    const result = await sendUpdateResendingDropped(deadline, () => client.withDeadline(deadline, () => handle.executeUpdate(turnUpdate, { args: [turn], updateId })));
    return result.response;
  } catch (err) {
    ctx.logger.warn({ err, sessionId }, 'the new app session did not greet; its first run starts it');
    return '';
  }
}

async function readApp(ctx: CoreContext, scope: Pick<AppScope, 'tenantId' | 'projectId'>, sessionId: string): Promise<AppSessionDoc> {
  const session = await ctx.models.AppSession.findOne({ _id: sessionId, tenantId: scope.tenantId, projectId: scope.projectId }).lean();
  if (!session) throw sessionNotFound();
  return session;
}
export { readApp as readAppSession };

// ---------------------------------------------------------------- list

/** Default window of the list: the 24 hours before `end_time`. */
export const LIST_DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;

export async function listAppSessions(ctx: CoreContext, app: { tenantId: string; projectId: string; environments?: readonly string[] | null }, body: AppSessionListFilter, page: { offset: number; limit: number }) {
  const end = body.end_time ? new Date(body.end_time) : new Date();
  const start = body.start_time ? new Date(body.start_time) : new Date(end.getTime() - LIST_DEFAULT_WINDOW_MS);
  // A window that ends before it starts holds no session.
  if (start.getTime() > end.getTime()) return { total_count: 0, sessions: [] };
  const filter: Record<string, unknown> = {
    tenantId: app.tenantId,
    projectId: app.projectId,
    createdAt: { $gte: start, $lte: end },
    ...(body.env_name
      ? { environment: body.env_name.toLowerCase() }
      : app.environments && app.environments.length > 0
        ? { environment: { $in: [...app.environments] } }
        : {}),
    ...(body.user_reference_id ? { userReference: body.user_reference_id } : {}),
    ...(body.session_reference_id ? { sessionReference: body.session_reference_id } : {}),
  };
  const [total, sessions] = await Promise.all([
    ctx.models.AppSession.countDocuments(filter),
    ctx.models.AppSession.find(filter).sort({ createdAt: -1, _id: -1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  const cores = await ctx.models.Session.find({ tenantId: app.tenantId, projectId: app.projectId, _id: { $in: sessions.map((s) => s._id) } })
    .select({ endedAt: 1, lastActivityAt: 1 })
    .lean();
  const coreById = new Map(cores.map((c) => [c._id, c]));
  return {
    total_count: total,
    sessions: sessions.map((s) => {
      const core = coreById.get(s._id);
      const ended = s.terminatedAt ?? core?.endedAt ?? null;
      return {
        session_id: `s-${s._id}`,
        session_reference_id: s.sessionReference ?? '',
        user_reference_id: s.userReference ?? '',
        env_name: s.environment,
        start_time: new Date(s.createdAt).toISOString(),
        end_time: ended ? new Date(ended).toISOString() : null,
        last_activity_at: new Date(core?.lastActivityAt ?? s.createdAt).toISOString(),
        source: s.source ?? null,
      };
    }),
  };
}

// ---------------------------------------------------------------- terminate

/** A short, deterministic account of the conversation from its transcript (no model call). */
export async function conversationSummary(ctx: CoreContext, core: SessionDoc | null): Promise<string> {
  if (!core) return 'No messages were exchanged.';
  const messages = await ctx.models.TranscriptMessage.find({ tenantId: core.tenantId, sessionId: core._id }).sort({ seq: 1 }).limit(500).lean();
  const user = messages.filter((m) => m.role === 'user');
  const agent = messages.filter((m) => m.role === 'assistant');
  if (messages.length === 0) return 'No messages were exchanged.';
  const cut = (text: string) => (text.length > 200 ? `${text.slice(0, 197)}...` : text);
  const parts = [`${user.length} user message${user.length === 1 ? '' : 's'} and ${agent.length} agent repl${agent.length === 1 ? 'y' : 'ies'}.`];
  if (user[0]) parts.push(`The user opened with: "${cut(user[0].content)}".`);
  if (agent.length > 0) parts.push(`The agent's last reply: "${cut(agent[agent.length - 1]!.content)}".`);
  return parts.join(' ');
}

export const END_OF_CONVERSATION_MESSAGE = 'The conversation has ended.';

/**
 * Ends the session an identity names (sessionId wins over sessionReference): its workflow gets
 * the end signal (terminated if it does not close), which discards the session-scoped memory it
 * holds, and the identity is freed. A session already ended, or not found, answers the same body.
 */
export async function terminateAppSession(ctx: CoreContext, scope: AppScope, identity: ParsedIdentity) {
  const owned = { tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment };
  const found = identity.sessionId
    ? await ctx.models.AppSession.findOne({ ...owned, _id: identity.sessionId }).lean()
    : await ctx.models.AppSession.findOne({ ...owned, liveKey: liveKey(scope, 'ref', identity.sessionReference!) }).lean();
  let reason = 'terminated';
  let summary = 'No messages were exchanged.';
  let session: AppSessionDoc | null = found;
  if (!found) reason = 'not_found';
  else {
    const core = await findCurrentSession(ctx, { tenantId: scope.tenantId, projectId: scope.projectId }, found._id).catch(() => null);
    summary = await conversationSummary(ctx, core);
    if (found.terminatedAt) reason = 'already_terminated';
    else {
      forgetRunningSession(ctx, scope.tenantId, found._id);
      if (core && core.status !== 'ended') await endSessionWorkflow(ctx, { tenantId: scope.tenantId, sessionId: found._id }, 'terminated');
      session = await retire(ctx, found, new Date());
    }
  }
  return {
    status: 'terminated' as const,
    userReference: session?.userReference ?? null,
    sessionReference: session?.sessionReference ?? identity.sessionReference ?? null,
    userId: session?.userId ?? null,
    sessionId: session ? `s-${session._id}` : identity.sessionId && identity.sessionId !== NO_SESSION ? `s-${identity.sessionId}` : null,
    appId: scope.projectId,
    attachments: [] as { fileId: string; fileName: string; fileType: string }[],
    events: [{ type: 'End_of_Conversation', content: { messageToUser: END_OF_CONVERSATION_MESSAGE }, params: { reason, conversationSummary: summary } }],
  };
}

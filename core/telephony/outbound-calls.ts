// Outbound calls as the public API offers them (docs/telephony/outbound.md): initiate (idempotent
// by key, one call per key whatever the concurrency), lookup, list, summary, search by blind
// index, terminate, the waits the event stream makes, and the provider's status callbacks handed
// to the call's workflow. The workflow owns the call; this layer writes the row the API fixes at
// initiation and reads the projection the workflow keeps.
import { createHash } from 'node:crypto';
import { TypedSearchAttributes } from '@temporalio/common';
import { canonicalJson } from '../../lib/canonical-json';
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { isDuplicateKey } from '../../db/duplicate-key';
import { driverCollection } from '../../db/driver-collection';
import { tenantDataKey } from '../../db/tenant-data-key';
import { type ProjectDoc } from '../../db/project';
import {
  destinationIndex,
  newOutboundCallId,
  outboundCallProjection,
  sealDestinationWith,
  type DestinationType,
  type OutboundCallDoc,
  type OutboundOutcome,
  type OutboundPhase,
} from '../../db/outbound-call';
import { DomainError } from '../../lib/errors';
import { freshReadsPerOwner } from '../../lib/fresh-reads';
import { readChannelConnection } from './connections';
import { endProviderCall } from './provider-calls';
import { isOutboundCallRef } from './call-refs';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { canSeeProject, type Principal } from '../../lib/permissions';
import { hasGrant } from '../../lib/api-scopes';
import { isE164, maskCallSid, maskPhoneNumber, maskSipUri, normalizedDestination, parseSafeSipUri } from '../../lib/phone';
import { type Config } from '../../lib/config';
import {
  OUTBOUND_CALL_WORKFLOW_TYPE,
  outboundCallStateQuery,
  outboundCallWorkflowId,
  outboundProviderStatusSignal,
  terminateOutboundCallUpdate,
  waitOutboundCallUpdate,
  type OutboundCallStartInput,
  type OutboundCallView,
  type OutboundCallWorkflow,
  type OutboundProviderStatusInput,
} from '../../workflows/definitions';
import { CallStatusKey, ChannelConnectionIdKey, ChannelKey, EnvironmentKey, ProjectIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { requireEnvironment } from '../platform-keys/environments';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { type CoreContext } from '../context';
import { isWorkflowAlreadyStarted, isWorkflowNotFound, STATE_QUERY_TIMEOUT_MS, TEMPORAL_CALL_TIMEOUT_MS, temporalClient, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';

export const OUTBOUND_READ = 'outbound_calls.read';
export const OUTBOUND_INITIATE = 'outbound_calls.initiate';

export interface OutboundScope {
  tenantId: string;
  projectId: string;
  environment: string;
}

const notFound = (what = 'Outbound call') => new DomainError('CHANNEL_NOT_FOUND', `${what} not found`);

/**
 * The project and environment a request acts in: 401 for a credential without the scope (as the
 * spec has it), 404 `CHANNEL_NOT_FOUND` for a project the credential cannot see (named by its slug
 * or its id), 403 for an environment a key is not bound to.
 */
const projectReads = freshReadsPerOwner<ProjectDoc | null>();

/**
 * The project a call path names (its slug or id), the read shared by the requests that ask at
 * once and never with one that began before a request asked: a burst of calls costs two reads.
 */
function readProjectByPlace(ctx: CoreContext, tenantId: string, slugOrId: string): Promise<ProjectDoc | null> {
  return projectReads(ctx.models).read(JSON.stringify([tenantId, slugOrId]), () =>
    driverCollection(ctx.models.Project).findOne({ tenantId, deletingAt: null, $or: [{ slug: slugOrId }, { _id: slugOrId }] }),
  );
}

export async function outboundScope(ctx: CoreContext, principal: Principal, projectSlug: string, environment: string, grant: string): Promise<OutboundScope> {
  if (!hasGrant(principal, grant)) throw new DomainError('UNAUTHORIZED', `This key lacks the scope ${grant}`);
  const project = await readProjectByPlace(ctx, principal.tenantId, projectSlug);
  if (!project || !canSeeProject(principal, project)) throw notFound('Channel connection');
  requireEnvironment(principal, environment);
  return { tenantId: project.tenantId, projectId: project._id, environment };
}

/** The blind index key: OUTBOUND_DESTINATION_INDEX_KEY, or outside production one derived from the master ring. */
export function destinationIndexKey(config: Config, ctx: CoreContext): Buffer {
  if (config.OUTBOUND_DESTINATION_INDEX_KEY) return Buffer.from(config.OUTBOUND_DESTINATION_INDEX_KEY, 'base64');
  if (config.NODE_ENV === 'production') throw new DomainError('SERVICE_UNAVAILABLE', 'outbound calls need OUTBOUND_DESTINATION_INDEX_KEY in production');
  return deriveKey(requireMasterKeys(ctx).current.key, KEY_PURPOSE.outboundDestinationIndex);
}

export type OutboundDestination = { type: 'phone'; number: string } | { type: 'sip'; sipUri: string };

/** The destination's type and value, or 400 `INVALID_PHONE_NUMBER` / `SIP_INJECTION_REJECTED`. */
export function checkDestination(to: OutboundDestination): { type: DestinationType; value: string } {
  if (to.type === 'phone') {
    if (!isE164(to.number)) throw new DomainError('INVALID_PHONE_NUMBER', 'to.number must be an E.164 number: + and up to 15 digits, no leading zero');
    return { type: 'phone', value: to.number };
  }
  const parsed = parseSafeSipUri(to.sipUri);
  if (parsed.refusal !== null) throw new DomainError('SIP_INJECTION_REJECTED', `to.sipUri refused: ${parsed.refusal}`);
  return { type: 'sip', value: to.sipUri };
}

/** A destination as search takes it (a number or a SIP URI): its type by its form. */
export function searchedDestination(destination: string): { type: DestinationType; value: string } {
  if (/^sips?:/i.test(destination)) return checkDestination({ type: 'sip', sipUri: destination });
  return checkDestination({ type: 'phone', number: destination });
}

export const maskDestination = (type: DestinationType, value: string): string => (type === 'phone' ? maskPhoneNumber(value) : maskSipUri(value));

export interface InitiateBody {
  channelConnectionId: string;
  to: OutboundDestination;
  idempotencyKey: string;
  clientReferenceId?: string | null | undefined;
  amdMode?: 'off' | 'continue' | 'disconnect' | undefined;
  sessionMetadata?: Record<string, unknown> | undefined;
}

export function initiateRequestHash(scope: OutboundScope, body: InitiateBody): string {
  const { idempotencyKey: _key, ...rest } = body;
  return createHash('sha256').update(canonicalJson({ environment: scope.environment, ...rest, clientReferenceId: rest.clientReferenceId ?? null, amdMode: rest.amdMode ?? null, sessionMetadata: rest.sessionMetadata ?? null })).digest('hex');
}

export interface InitiatedCall {
  status: 201 | 200;
  data: { outboundCallId: string; phase: OutboundPhase; initiationState: OutboundCallDoc['initiationState'] };
}

function startInput(ctx: CoreContext, doc: OutboundCallDoc): OutboundCallStartInput {
  return {
    outboundCallId: doc._id,
    tenantId: doc.tenantId,
    projectId: doc.projectId,
    environment: doc.environment,
    channelConnectionId: doc.channelConnectionId,
    amdMode: doc.amdMode,
    acceptedAtMs: doc.createdAt.getTime(),
    abandonAfterMs: ctx.config.OUTBOUND_CALL_ABANDON_MS,
    maxDurationMs: ctx.config.OUTBOUND_CALL_MAX_DURATION_MS,
    reconcileWindowMs: ctx.config.OUTBOUND_RECONCILE_WINDOW_MS,
  };
}

/** Starts the call's workflow; one already started (or run) under the id is fine and never started again. */
async function startCallWorkflow(ctx: CoreContext, doc: OutboundCallDoc): Promise<void> {
  const client = await temporalClient(ctx);
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start<OutboundCallWorkflow>(OUTBOUND_CALL_WORKFLOW_TYPE, {
        workflowId: outboundCallWorkflowId(doc._id),
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [startInput(ctx, doc)],
        // A closed run is never started again: that would place the call a second time.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: doc.tenantId },
          { key: ProjectIdKey, value: doc.projectId },
          { key: EnvironmentKey, value: doc.environment },
          { key: ChannelKey, value: 'voice' },
          { key: ChannelConnectionIdKey, value: [doc.channelConnectionId] },
          { key: CallStatusKey, value: ['accepted'] },
        ]),
        staticSummary: `outbound call · ${doc.destinationType} ${doc.destinationMasked}`,
      }),
    );
  } catch (err) {
    if (isWorkflowAlreadyStarted(err)) return;
    throw temporalErrorToDomainError(err, 'Call runtime');
  }
}

/** The answer to a key already used: the same body gets the call (200), another body 409. */
async function replay(ctx: CoreContext, existing: OutboundCallDoc, requestHash: string): Promise<InitiatedCall> {
  if (existing.requestHash !== requestHash) {
    throw new DomainError('IDEMPOTENCY_CONFLICT', 'This idempotencyKey was already used with a different request body');
  }
  // The first request may have died between its row and its workflow: its retry starts it.
  if (existing.initiationState === 'created') await startCallWorkflow(ctx, existing);
  return { status: 200, data: { outboundCallId: existing._id, phase: existing.phase, initiationState: existing.initiationState } };
}

/**
 * Initiates a call: the row (the idempotency record, with the sealed destination) is inserted
 * first under a unique (tenant, project, idempotencyKey) index, so of any number of concurrent
 * requests with one key exactly one inserts and starts the workflow; the others find its row.
 * Answers once the workflow's start is recorded, never waiting for the provider: the submit's
 * outcome shows on lookup (`initiationState`, `failureReason`).
 */
export async function initiateOutboundCall(ctx: CoreContext, principal: Principal, place: { projectSlug: string; env: string }, body: InitiateBody): Promise<InitiatedCall> {
  if (!hasGrant(principal, OUTBOUND_INITIATE)) throw new DomainError('UNAUTHORIZED', `This key lacks the scope ${OUTBOUND_INITIATE}`);
  const destination = checkDestination(body.to);
  // The project, the connection and the tenant's data key are read at once: the answer waits for
  // one round trip to the store before the insert, then the workflow's start.
  const [scope, found, dataKey] = await Promise.all([
    outboundScope(ctx, principal, place.projectSlug, place.env, OUTBOUND_INITIATE),
    readChannelConnection(ctx, body.channelConnectionId, principal.tenantId),
    tenantDataKey(ctx.models.TenantDataKey, requireMasterKeys(ctx), principal.tenantId),
  ]);
  const requestHash = initiateRequestHash(scope, body);
  const owner = { tenantId: scope.tenantId, projectId: scope.projectId };
  const connection = found && found.tenantId === scope.tenantId && found.projectId === scope.projectId ? found : null;
  if (!usable(connection, scope)) {
    // A retry of a call whose connection was disabled since still finds its call.
    const existing = await ctx.models.OutboundCall.findOne({ ...owner, idempotencyKey: body.idempotencyKey }).lean();
    if (existing) return replay(ctx, existing, requestHash);
    throw notFound('Channel connection');
  }
  if (ctx.config.NODE_ENV === 'production' && !ctx.config.PUBLIC_BASE_URL.startsWith('https://')) {
    throw new DomainError('OUTBOUND_WEBHOOK_NOT_CONFIGURED', 'PUBLIC_BASE_URL must be the https address the provider reaches this platform at');
  }
  const indexKey = destinationIndexKey(ctx.config, ctx);
  const _id = newOutboundCallId();
  const sealed = sealDestinationWith(dataKey, { _id, ...owner }, destination.value);
  const now = new Date();
  const row = {
    _id,
    ...owner,
    environment: scope.environment,
    channelConnectionId: connection._id,
    destinationType: destination.type,
    destination: sealed,
    destinationMasked: maskDestination(destination.type, destination.value),
    destinationIndex: destinationIndex(indexKey, scope.tenantId, normalizedDestination(destination.type, destination.value)),
    clientReferenceId: body.clientReferenceId ?? null,
    idempotencyKey: body.idempotencyKey,
    requestHash,
    amdMode: body.amdMode ?? connection.amdMode,
    sessionMetadata: body.sessionMetadata ?? null,
    phase: 'accepted' as const,
    outcome: null,
    initiationState: 'created' as const,
    failureReason: null,
    providerCallSid: null,
    sessionId: null,
    answeredBy: null,
    statusHistory: [{ phase: 'accepted' as const, outcome: null, providerEventAt: null, ingestedAt: now.toISOString(), version: 1 }],
    version: 1,
    revision: 0,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await driverCollection(ctx.models.OutboundCall).insertOne(row as OutboundCallDoc);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const winner = await ctx.models.OutboundCall.findOne({ ...owner, idempotencyKey: body.idempotencyKey }).lean();
    if (!winner) throw err;
    return replay(ctx, winner, requestHash);
  }
  await startCallWorkflow(ctx, row as OutboundCallDoc);
  return { status: 201, data: { outboundCallId: _id, phase: 'accepted', initiationState: 'created' } };
}

function usable(connection: ChannelConnectionDoc | null, scope: OutboundScope): connection is ChannelConnectionDoc {
  return !!connection && connection.status === 'active' && connection.environment === scope.environment;
}

async function findCall(ctx: CoreContext, scope: OutboundScope, id: string): Promise<OutboundCallDoc> {
  const doc = await ctx.models.OutboundCall.findOne({ _id: id, tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment }).lean();
  if (!doc) throw notFound();
  return doc;
}

/** The row with the workflow's live view laid over it (the projection may trail by a write). */
function withView(doc: OutboundCallDoc, view: OutboundCallView | null): OutboundCallDoc {
  if (!view || view.revision < doc.revision) return doc;
  return { ...doc, ...outboundCallProjection(view) };
}

async function liveView(ctx: CoreContext, id: string): Promise<OutboundCallView | null> {
  try {
    const client = await temporalClient(ctx);
    return await withDeadline(client, STATE_QUERY_TIMEOUT_MS, () => client.workflow.getHandle(outboundCallWorkflowId(id)).query(outboundCallStateQuery));
  } catch {
    // Closed long ago, not started yet, or Temporal slow: the projection answers.
    return null;
  }
}

export interface PresentedCall {
  outboundCallId: string;
  channelConnectionId: string;
  environment: string;
  destinationType: DestinationType;
  destination: string;
  clientReferenceId: string | null;
  initiationState: OutboundCallDoc['initiationState'];
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  failureReason: string | null;
  amdMode: OutboundCallDoc['amdMode'];
  providerCallSid: string | null;
  sessionId: string | null;
  statusHistory: { phase: OutboundPhase; outcome: OutboundOutcome | null; providerEventAt: string | null; ingestedAt: string }[];
  createdAt: string;
  updatedAt: string;
}

/** The spec's call: destination and provider call id masked, never the sealed value or the index. */
export function presentCall(doc: OutboundCallDoc): PresentedCall {
  return {
    outboundCallId: doc._id,
    channelConnectionId: doc.channelConnectionId,
    environment: doc.environment,
    destinationType: doc.destinationType,
    destination: doc.destinationMasked,
    clientReferenceId: doc.clientReferenceId,
    initiationState: doc.initiationState,
    phase: doc.phase,
    outcome: doc.outcome,
    failureReason: doc.failureReason,
    amdMode: doc.amdMode,
    providerCallSid: doc.providerCallSid ? maskCallSid(doc.providerCallSid) : null,
    sessionId: doc.sessionId,
    statusHistory: doc.statusHistory.map((e) => ({ phase: e.phase, outcome: e.outcome ?? null, providerEventAt: e.providerEventAt ?? null, ingestedAt: e.ingestedAt })),
    createdAt: doc.createdAt.toISOString(),
    updatedAt: new Date(doc.updatedAt).toISOString(),
  };
}

/** One call, as live as the workflow can tell within STATE_QUERY_TIMEOUT_MS. */
export async function lookupOutboundCall(ctx: CoreContext, scope: OutboundScope, id: string): Promise<OutboundCallDoc> {
  const doc = await findCall(ctx, scope, id);
  if (doc.phase === 'terminal' && doc.revision > 0) return doc;
  return withView(doc, await liveView(ctx, id));
}

export interface CallFilters {
  channelConnectionId?: string | undefined;
  phase?: OutboundPhase | undefined;
  outcome?: OutboundOutcome | undefined;
  clientReferenceId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export interface ListOptions extends CallFilters {
  limit?: number | undefined;
  cursor?: string | undefined;
}

function filterOf(scope: OutboundScope, f: CallFilters): Record<string, unknown> {
  const filter: Record<string, unknown> = { tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment };
  if (f.channelConnectionId) filter.channelConnectionId = f.channelConnectionId;
  if (f.phase) filter.phase = f.phase;
  if (f.outcome) filter.outcome = f.outcome;
  if (f.clientReferenceId) filter.clientReferenceId = f.clientReferenceId;
  if (f.from || f.to) filter.createdAt = { ...(f.from ? { $gte: new Date(f.from) } : {}), ...(f.to ? { $lte: new Date(f.to) } : {}) };
  return filter;
}

function encodeCursor(doc: Pick<OutboundCallDoc, 'createdAt' | '_id'>): string {
  return Buffer.from(JSON.stringify([doc.createdAt.getTime(), doc._id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof ms === 'number' && Number.isFinite(ms) && typeof id === 'string' && id.length <= 64) return { createdAt: new Date(ms), id };
  } catch {
    // Falls through to the refusal.
  }
  // Well formed (any string may be a cursor) but not one of ours: 422, as no schema can say which strings are.
  throw new DomainError('UNPROCESSABLE_ENTITY', 'cursor: not a cursor this API returned');
}

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 100;

/** A page of calls, newest first; `nextCursor` null on the last page. */
export async function listOutboundCalls(ctx: CoreContext, scope: OutboundScope, options: ListOptions, extra: Record<string, unknown> = {}): Promise<{ data: PresentedCall[]; nextCursor: string | null }> {
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  const filter: Record<string, unknown> = { ...filterOf(scope, options), ...extra };
  if (options.cursor) {
    const c = decodeCursor(options.cursor);
    filter.$or = [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, _id: { $lt: c.id } }];
  }
  const docs = await ctx.models.OutboundCall.find(filter).sort({ createdAt: -1, _id: -1 }).limit(limit + 1).lean();
  const page = docs.slice(0, limit);
  return { data: page.map(presentCall), nextCursor: docs.length > limit ? encodeCursor(page[page.length - 1]!) : null };
}

/** Search: the list's filters, and a destination matched by its blind index (never stored or echoed in clear). */
export async function searchOutboundCalls(ctx: CoreContext, scope: OutboundScope, options: ListOptions & { destination?: string | undefined }) {
  const { destination, ...rest } = options;
  if (destination === undefined) return listOutboundCalls(ctx, scope, rest);
  const d = searchedDestination(destination);
  const index = destinationIndex(destinationIndexKey(ctx.config, ctx), scope.tenantId, normalizedDestination(d.type, d.value));
  return listOutboundCalls(ctx, scope, rest, { destinationIndex: index });
}

export interface CallSummary {
  total: number;
  answered: number;
  inFlight: number;
  machineDetected: number;
  byOutcome: Record<string, number>;
}

/** Counts over the filtered calls: `answered` reached `in_progress`, `inFlight` is not terminal, `machineDetected` ended `machine`. */
export async function summarizeOutboundCalls(ctx: CoreContext, scope: OutboundScope, filters: Pick<CallFilters, 'channelConnectionId' | 'from' | 'to'>): Promise<CallSummary> {
  const summary: CallSummary = { total: 0, answered: 0, inFlight: 0, machineDetected: 0, byOutcome: {} };
  const cursor = ctx.models.OutboundCall.find(filterOf(scope, filters)).select({ phase: 1, outcome: 1, 'statusHistory.phase': 1 }).lean().cursor();
  for await (const doc of cursor) {
    summary.total++;
    if (doc.phase !== 'terminal') summary.inFlight++;
    if (doc.statusHistory.some((e) => e.phase === 'in_progress')) summary.answered++;
    if (doc.outcome === 'machine') summary.machineDetected++;
    if (doc.outcome) summary.byOutcome[doc.outcome] = (summary.byOutcome[doc.outcome] ?? 0) + 1;
  }
  return summary;
}

/** Terminate: `canceled` before the call connects, a hang-up after; a call already over answers its end. */
export async function terminateOutboundCall(ctx: CoreContext, scope: OutboundScope, id: string): Promise<{ outboundCallId: string; phase: OutboundPhase; outcome: OutboundOutcome | null }> {
  const doc = await findCall(ctx, scope, id);
  if (doc.phase === 'terminal') return { outboundCallId: doc._id, phase: doc.phase, outcome: doc.outcome };
  const client = await temporalClient(ctx);
  try {
    return await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS * 2, () => client.workflow.getHandle(outboundCallWorkflowId(id)).executeUpdate(terminateOutboundCallUpdate, { args: [] }));
  } catch (err) {
    if (!isWorkflowNotFound(err) && !/already completed|workflow execution already/i.test(String((err as Error)?.message))) throw temporalErrorToDomainError(err, 'Call runtime');
    const now = await findCall(ctx, scope, id);
    return { outboundCallId: now._id, phase: now.phase, outcome: now.outcome };
  }
}

/** The call for the event stream: its row, 404 when missing or another project's or environment's. */
export async function streamableCall(ctx: CoreContext, scope: OutboundScope, id: string): Promise<OutboundCallDoc> {
  return lookupOutboundCall(ctx, scope, id);
}

/**
 * The call once its version passes `afterVersion`, or after `waitMs` (a long-poll of the workflow,
 * answered the moment a transition happens). A closed workflow, or one that refuses the wait,
 * is read from the projection instead (after a pause when nothing changed, so a stream polls it).
 */
export async function waitForCallChange(ctx: CoreContext, scope: OutboundScope, id: string, afterVersion: number, waitMs: number, pollMs: number): Promise<OutboundCallDoc> {
  const doc = await findCall(ctx, scope, id);
  if (doc.version > afterVersion || doc.phase === 'terminal') return doc;
  try {
    const client = await temporalClient(ctx);
    const view = await withDeadline(client, waitMs + TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.getHandle(outboundCallWorkflowId(id)).executeUpdate(waitOutboundCallUpdate, { args: [{ afterVersion, waitMs }] }),
    );
    return withView(doc, view);
  } catch {
    await new Promise((r) => setTimeout(r, pollMs));
    return findCall(ctx, scope, id);
  }
}

/**
 * A provider status callback for a call (its signature already checked against `connection`):
 * signalled to the call's workflow. `not_found` for a call that is not this connection's;
 * `closed` when the call's workflow has ended (a late callback: nothing left to change).
 */
export async function ingestProviderStatus(
  ctx: CoreContext,
  connection: ChannelConnectionDoc,
  call: { outboundCallId: string; ref?: string | undefined },
  status: Omit<OutboundProviderStatusInput, 'channelConnectionId'>,
): Promise<'taken' | 'closed' | 'not_found'> {
  const { outboundCallId } = call;
  const client = await temporalClient(ctx);
  // The URL's ref proves the call is the connection's without a read; without one (a call placed
  // before refs, a master key rotated since) the row says. The signal goes out beside that check
  // (it names the connection, and the workflow drops a status from any other), so the provider's
  // answer waits for one round trip, not two.
  const provenByRef = isOutboundCallRef(requireMasterKeys(ctx), connection._id, outboundCallId, call.ref);
  const [owned, signalled] = await Promise.all([
    provenByRef || ctx.models.OutboundCall.exists({ _id: outboundCallId, tenantId: connection.tenantId, projectId: connection.projectId, channelConnectionId: connection._id }),
    /^oc_[a-z0-9]{1,40}$/.test(outboundCallId)
      ? withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
          client.workflow.getHandle(outboundCallWorkflowId(outboundCallId)).signal(outboundProviderStatusSignal, { ...status, channelConnectionId: connection._id }),
        ).then(
          () => 'taken' as const,
          (err: unknown) => (isWorkflowNotFound(err) ? ('closed' as const) : err),
        )
      : Promise.resolve('closed' as const),
  ]);
  if (!owned) return 'not_found';
  if (signalled !== 'taken' && signalled !== 'closed') throw temporalErrorToDomainError(signalled, 'Call runtime');
  if (signalled === 'closed' && status.callSid && CALL_SID.test(status.callSid) && LIVE_PROVIDER_STATUSES.has(status.callStatus)) await endStrayProviderCall(ctx, connection, outboundCallId, status.callSid, status.callStatus);
  return signalled;
}

/** A Twilio Call SID: only one of these goes into a provider API path. */
const CALL_SID = /^CA[0-9a-f]{32}$/;
/** Twilio's CallStatus values of a call that has not ended. */
const LIVE_PROVIDER_STATUSES = new Set(['queued', 'initiated', 'ringing', 'in-progress']);

/**
 * A live call the provider reports for an outbound call that has ended here under another sid or
 * none: placed by a submit that was still out when the call ended (its workflow terminated, or
 * reconciled before the provider had it). Nothing here will ever follow it, so it is cancelled or
 * hung up at once, and the ended row learns its sid; a failure is the operator's to see.
 */
async function endStrayProviderCall(ctx: CoreContext, connection: ChannelConnectionDoc, outboundCallId: string, callSid: string, callStatus: string): Promise<void> {
  const call = await ctx.models.OutboundCall.findOne(
    { _id: outboundCallId, tenantId: connection.tenantId, projectId: connection.projectId, channelConnectionId: connection._id },
    { phase: 1, providerCallSid: 1 },
  ).lean();
  if (!call || call.phase !== 'terminal' || call.providerCallSid === callSid) return;
  try {
    const ended = await endProviderCall(ctx, { tenantId: connection.tenantId, projectId: connection.projectId, channelConnectionId: connection._id, callSid, status: callStatus === 'in-progress' ? 'completed' : 'canceled' });
    ctx.logger.warn({ tenantId: connection.tenantId, outboundCallId, callSid: maskCallSid(callSid), ended: ended.done }, 'the provider reported a live call for an outbound call that had already ended; it was ended at the provider');
  } catch (err) {
    const { status, code } = err as { status?: unknown; code?: unknown };
    ctx.logger.warn({ tenantId: connection.tenantId, outboundCallId, callSid: maskCallSid(callSid), providerStatus: status ?? null, providerCode: code ?? null }, "the provider reported a live call for an outbound call that had already ended, and could not be told to end it; end it in the provider's console");
  }
  if (!call.providerCallSid) {
    await ctx.models.OutboundCall.updateOne({ _id: outboundCallId, tenantId: connection.tenantId, phase: 'terminal', providerCallSid: null }, { $set: { providerCallSid: callSid, initiationState: 'submitted' } });
  }
}

/** Twilio's RFC 2822 Timestamp as ISO 8601, or null when absent or unreadable. */
export function providerTimestamp(value: string | undefined | null): string | null {
  if (!value) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

// Call recordings: the provider's recording-status callback recorded against the connection's own
// tenant and session, the durable fetch into GridFS started for a completed one, a session's
// recordings listed with signed media URLs, and a media request's stored file found.
import { TypedSearchAttributes } from '@temporalio/common';
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { isDuplicateKey } from '../../db/duplicate-key';
import {
  newRecordingId,
  recordingMediaBucket,
  type ProviderRecordingStatus,
  PROVIDER_RECORDING_STATUSES,
  type RecordingDoc,
  type RecordingFileDoc,
  type UnavailableReason,
  RETRYABLE_REASONS,
} from '../../db/recording';
import { DomainError } from '../../lib/errors';
import { RECORDING_FETCH_WORKFLOW_TYPE, recordingFetchWorkflowId, type RecordingFetchInput } from '../../workflows/definitions';
import { ProjectIdKey, SessionIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { isWorkflowAlreadyStarted, TEMPORAL_CALL_TIMEOUT_MS, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';
import { type CoreContext } from '../context';
import { signMediaToken, type MediaDisposition, type MediaTokenClaims } from './recording-media-tokens';

/** Most recordings one list answers for a session, and most files of one recording (behaviour notes §8). */
export const MAX_RECORDINGS_PER_SESSION = 64;
export const MAX_FILES_PER_RECORDING = 32;

// ------------------------------------------------------------------ the provider's callback

export interface RecordingStatusReport {
  recordingSid: string;
  recordingUrl: string | null;
  status: ProviderRecordingStatus;
  durationSeconds: number | null;
  channels: number;
  source: string | null;
  startTime: Date | null;
  callSid: string;
}

const SID = (prefix: string) => new RegExp(`^${prefix}[0-9a-zA-Z]{32}$`);
const RECORDING_SID = SID('RE');
const CALL_SID = SID('CA');

const badForm = (message: string) => new DomainError('VALIDATION_ERROR', `body.${message}`);

/** The fields of Twilio's recording-status form this platform uses, checked. */
export function parseRecordingStatusForm(form: Record<string, string>): RecordingStatusReport {
  const recordingSid = form.RecordingSid ?? '';
  if (!RECORDING_SID.test(recordingSid)) throw badForm('RecordingSid: must be a recording SID (RE followed by 32 letters or digits)');
  const callSid = form.CallSid ?? '';
  if (!CALL_SID.test(callSid)) throw badForm('CallSid: must be a call SID (CA followed by 32 letters or digits)');
  const status = form.RecordingStatus as ProviderRecordingStatus;
  if (!PROVIDER_RECORDING_STATUSES.includes(status)) throw badForm(`RecordingStatus: must be one of ${PROVIDER_RECORDING_STATUSES.join(', ')}`);
  const recordingUrl = form.RecordingUrl && form.RecordingUrl.length > 0 ? form.RecordingUrl : null;
  if (status === 'completed' && !recordingUrl) throw badForm('RecordingUrl: is required when RecordingStatus is completed');
  const duration = form.RecordingDuration !== undefined && /^\d{1,9}$/.test(form.RecordingDuration) ? Number(form.RecordingDuration) : null;
  const channels = form.RecordingChannels === '2' ? 2 : 1;
  const started = form.RecordingStartTime ? new Date(form.RecordingStartTime) : null;
  const source = form.RecordingSource && /^[A-Za-z]{1,64}$/.test(form.RecordingSource) ? form.RecordingSource : null;
  return { recordingSid, recordingUrl, status, durationSeconds: duration, channels, source, startTime: started && !Number.isNaN(started.getTime()) ? started : null, callSid };
}

/**
 * Whether `url` is the media URL of this recording on Twilio's own API host (`api.twilio.com`, or a
 * regional `api.<edge>.<region>.twilio.com`), over HTTPS, with no credentials, port, query or
 * fragment. The URL comes from a webhook's body: it is data, and the platform fetches nothing else.
 */
export function isTwilioRecordingUrl(url: string, accountSid: string, recordingSid: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'https:' || parsed.username || parsed.password || parsed.port || parsed.search || parsed.hash) return false;
  if (!/^api(\.[a-z0-9-]+){0,2}\.twilio\.com$/.test(parsed.hostname)) return false;
  return parsed.pathname === `/2010-04-01/Accounts/${accountSid}/Recordings/${recordingSid}`;
}

/** Where a status report's recording belongs: given by the URL we handed the provider. */
export interface RecordingTarget {
  sessionId?: string;
  outboundCallId?: string;
}

/**
 * The session a recording belongs to: the URL's `sessionId` when it is a session of the
 * connection's own tenant and project (else 404 SESSION_NOT_FOUND, nothing is recorded), or the
 * session of the outbound call named by `outboundCallId`, read from the outbound-call projection
 * (null while the call has none).
 */
async function resolveSession(ctx: CoreContext, connection: ChannelConnectionDoc, target: RecordingTarget): Promise<string | null> {
  if (target.sessionId) {
    const session = await ctx.models.Session.findOne({ _id: target.sessionId, tenantId: connection.tenantId, projectId: connection.projectId }, { _id: 1 }).lean();
    if (!session) throw new DomainError('SESSION_NOT_FOUND', 'Session not found');
    return session._id;
  }
  if (target.outboundCallId) return sessionOfOutboundCall(ctx, connection, target.outboundCallId);
  return null;
}

/** The outbound call's session, from its projection (`outbound_calls`), scoped to the connection's tenant and project. */
async function sessionOfOutboundCall(ctx: CoreContext, connection: ChannelConnectionDoc, outboundCallId: string): Promise<string | null> {
  const db = ctx.models.connection.db;
  if (!db) return null;
  const call = await db
    .collection<{ _id: string; sessionId?: string | null }>('outbound_calls')
    .findOne({ _id: outboundCallId, tenantId: connection.tenantId, projectId: connection.projectId }, { projection: { sessionId: 1 } });
  return typeof call?.sessionId === 'string' ? call.sessionId : null;
}

/** The outbound calls (ids) whose projection names the session, in the tenant and project. */
async function outboundCallsOfSession(ctx: CoreContext, tenantId: string, projectId: string, sessionId: string): Promise<string[]> {
  const db = ctx.models.connection.db;
  if (!db) return [];
  const calls = await db.collection<{ _id: string }>('outbound_calls').find({ tenantId, projectId, sessionId }, { projection: { _id: 1 } }).limit(16).toArray();
  return calls.map((c) => c._id);
}

const STATUS_RANK: Record<ProviderRecordingStatus, number> = { 'in-progress': 1, completed: 2, absent: 3, failed: 3 };

function availabilityOf(status: ProviderRecordingStatus): Pick<RecordingDoc, 'availability' | 'unavailableReason' | 'retryable'> {
  switch (status) {
    case 'in-progress':
      return { availability: 'media_in_progress', unavailableReason: 'call_in_progress', retryable: true };
    case 'completed':
      return { availability: 'media_in_progress', unavailableReason: 'media_in_progress', retryable: true };
    default:
      return { availability: 'unavailable', unavailableReason: 'media_not_available', retryable: false };
  }
}

/**
 * Records a status report of a connection's recording. Reports may come twice or out of order: a
 * report never moves a recording back (an `in-progress` after `completed` changes nothing), and
 * one never touches a recording of another connection. A media URL off Twilio's host is refused
 * (400) before anything is written. Returns the recording as it now is.
 */
export async function recordRecordingStatus(ctx: CoreContext, connection: ChannelConnectionDoc, target: RecordingTarget, report: RecordingStatusReport): Promise<RecordingDoc> {
  if (report.recordingUrl && !isTwilioRecordingUrl(report.recordingUrl, connection.accountSid, report.recordingSid)) {
    throw badForm("RecordingUrl: must be this recording's URL on Twilio's API host");
  }
  if (!target.sessionId && !target.outboundCallId) throw new DomainError('VALIDATION_ERROR', 'query: sessionId or outboundCallId is required');
  const sessionId = await resolveSession(ctx, connection, target);
  const key = { tenantId: connection.tenantId, providerRecordingSid: report.recordingSid, channelConnectionId: connection._id };
  const fields = {
    providerStatus: report.status,
    ...availabilityOf(report.status),
    ...(report.recordingUrl ? { mediaUrl: report.recordingUrl } : {}),
    channels: report.channels,
    source: report.source,
    ...(report.durationSeconds !== null ? { durationSeconds: report.durationSeconds } : {}),
    ...(report.startTime ? { recordingStartTime: report.startTime } : {}),
  };
  const now = new Date();
  try {
    await ctx.models.Recording.create({
      _id: newRecordingId(),
      ...key,
      projectId: connection.projectId,
      sessionId,
      outboundCallId: target.outboundCallId ?? null,
      callSid: report.callSid,
      provider: 'twilio',
      ...fields,
      retentionExpiresAt: new Date(now.getTime() + ctx.config.RECORDING_RETENTION_DAYS * 86_400_000),
    });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const behind = PROVIDER_RECORDING_STATUSES.filter((s) => STATUS_RANK[s] < STATUS_RANK[report.status]);
    // Only a recording not yet fetched moves on; one already stored keeps its files and availability.
    await ctx.models.Recording.updateOne({ ...key, providerStatus: { $in: behind }, availability: { $ne: 'available' } }, { $set: fields });
    if (sessionId) await ctx.models.Recording.updateOne({ ...key, sessionId: null }, { $set: { sessionId } });
  }
  const recording = await ctx.models.Recording.findOne(key).lean();
  if (!recording) throw new DomainError('CONFLICT', 'The recording belongs to another channel connection');
  return recording;
}

/** Starts the recording's fetch workflow (once: a workflow already running for it is left alone). */
export async function startRecordingFetch(ctx: CoreContext, recording: RecordingDoc): Promise<void> {
  const client = await ctx.temporal.client();
  const input: RecordingFetchInput = { tenantId: recording.tenantId, recordingId: recording._id };
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start(RECORDING_FETCH_WORKFLOW_TYPE, {
        workflowId: recordingFetchWorkflowId(recording._id),
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [input],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: recording.tenantId },
          { key: ProjectIdKey, value: recording.projectId },
          ...(recording.sessionId ? [{ key: SessionIdKey, value: recording.sessionId }] : []),
        ]),
        staticSummary: `fetch recording ${recording._id}`,
      }),
    );
  } catch (err) {
    if (isWorkflowAlreadyStarted(err)) return;
    throw temporalErrorToDomainError(err, 'The recording fetch');
  }
}

/**
 * Starts again the fetch of a recording whose fetch workflow closed without finishing (terminated
 * in Temporal, failed, timed out), while its row says the media is still coming; true when started.
 * `running`: whether a run of the fetch's workflow runs now (one started again is left alone).
 */
export async function restartClosedRecordingFetch(ctx: CoreContext, tenantId: string, recordingId: string, running: () => Promise<boolean>): Promise<boolean> {
  const recording = await ctx.models.Recording.findOne({ _id: recordingId, tenantId, availability: 'media_in_progress', providerStatus: 'completed' }).lean();
  if (!recording || (await running())) return false;
  await startRecordingFetch(ctx, recording);
  return true;
}

// ------------------------------------------------------------------ the session's recordings

export type SessionRecordingsStatus = 'success' | 'partial' | 'call_in_progress' | 'media_in_progress' | 'media_unavailable';

export interface RecordingFileView {
  recordingId: string;
  objectIndex: number;
  fileName: string;
  channel: string;
  recordingType: string;
  bytes: number;
  recordingStartTime: string | null;
  recordingEndTime: string | null;
  availability: RecordingDoc['availability'];
  url: string | null;
  urlKind: 'proxied';
  expiresIn: number | null;
  unavailableReason: UnavailableReason | null;
  retryable: boolean;
}

export interface RecordingView {
  recordingId: string;
  callId: string;
  availability: RecordingDoc['availability'];
  unavailableReason: UnavailableReason | null;
  retryable: boolean;
  durationSeconds: number | null;
  immutable: boolean;
  createdAt: string;
  retentionExpiresAt: string;
  files: RecordingFileView[];
}

export interface SessionRecordingsView {
  sessionId: string;
  projectId: string;
  status: SessionRecordingsStatus;
  unavailableReason: UnavailableReason | null;
  retryable: boolean;
  recordings: RecordingView[];
}

const isRetryable = (reason: UnavailableReason | null): boolean => reason !== null && (RETRYABLE_REASONS as readonly string[]).includes(reason);

/** A recording's availability now: past its retention (and not on legal hold) it is no longer served. */
function currentAvailability(rec: RecordingDoc, now: Date): Pick<RecordingDoc, 'availability' | 'unavailableReason' | 'retryable'> {
  if (!rec.immutable && rec.retentionExpiresAt.getTime() <= now.getTime()) return { availability: 'unavailable', unavailableReason: 'retention_expired', retryable: false };
  return { availability: rec.availability, unavailableReason: rec.unavailableReason, retryable: rec.retryable };
}

/** The proxied media URL of one file (relative; the caller prefixes the API host). */
export function mediaUrlPath(projectId: string, recordingId: string, token: string, objectIndex: number, disposition: MediaDisposition): string {
  return `/api/projects/${encodeURIComponent(projectId)}/recordings/${encodeURIComponent(recordingId)}/media/content/${token}?objectIndex=${objectIndex}&disposition=${disposition}`;
}

/**
 * A session's recordings with a signed media URL per stored file (bound to the issuing key and
 * the disposition). 404 SESSION_NOT_FOUND for a session not in the project; 413 past the limits.
 */
export async function listSessionRecordings(
  ctx: CoreContext,
  input: { tenantId: string; projectId: string; sessionId: string; disposition: MediaDisposition; keyId: string; environments: readonly string[] | null },
): Promise<{ view: SessionRecordingsView; urlsIssued: number }> {
  const { tenantId, projectId, sessionId } = input;
  const [session, calls] = await Promise.all([
    ctx.models.Session.findOne({ _id: sessionId, tenantId, projectId }, { status: 1, environment: 1 }).lean(),
    outboundCallsOfSession(ctx, tenantId, projectId, sessionId),
  ]);
  // A recording reported before its outbound call knew its session is found through the call.
  const mine = calls.length > 0 ? { $or: [{ sessionId }, { sessionId: null, outboundCallId: { $in: calls } }] } : { sessionId };
  const recordings = session ? await ctx.models.Recording.find({ tenantId, projectId, ...mine }).sort({ createdAt: 1, _id: 1 }).limit(MAX_RECORDINGS_PER_SESSION + 1).lean() : [];
  // A key bound to some environments sees only their sessions; the others are concealed like missing ones.
  const visible = !input.environments || input.environments.length === 0 || input.environments.includes(session?.environment ?? '');
  if (!session || !visible) throw new DomainError('SESSION_NOT_FOUND', 'Session not found');
  if (recordings.length > MAX_RECORDINGS_PER_SESSION) {
    throw new DomainError('RECORDING_QUERY_LIMIT_EXCEEDED', `The session has more than ${MAX_RECORDINGS_PER_SESSION} recordings, more than one answer lists`);
  }
  const crowded = recordings.find((r) => r.files.length > MAX_FILES_PER_RECORDING);
  if (crowded) throw new DomainError('RECORDING_OBJECT_LIMIT_EXCEEDED', `Recording ${crowded._id} has more than ${MAX_FILES_PER_RECORDING} files, more than one answer lists`);

  const ttl = ctx.config.RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS;
  const now = new Date();
  let urlsIssued = 0;
  const views: RecordingView[] = [];
  for (const rec of recordings) {
    const state = currentAvailability(rec, now);
    const files: RecordingFileView[] = [];
    // In file order (a voice room's files are listed as each attendance's closes).
    for (const file of [...rec.files].sort((a, b) => a.objectIndex - b.objectIndex)) {
      let url: string | null = null;
      let fileState = { availability: state.availability, unavailableReason: state.unavailableReason, retryable: state.retryable };
      if (state.availability === 'available') {
        try {
          const claims: MediaTokenClaims = { tenantId, projectId, recordingId: rec._id, objectIndex: file.objectIndex, disposition: input.disposition, keyId: input.keyId };
          url = mediaUrlPath(projectId, rec._id, await signMediaToken(ctx.config, claims, ttl), file.objectIndex, input.disposition);
          urlsIssued++;
        } catch {
          fileState = { availability: 'unavailable', unavailableReason: 'url_signing_failed', retryable: true };
        }
      }
      files.push({
        recordingId: rec._id,
        objectIndex: file.objectIndex,
        fileName: file.fileName,
        channel: file.channel,
        recordingType: file.recordingType,
        bytes: file.bytes,
        recordingStartTime: file.recordingStartTime?.toISOString() ?? null,
        recordingEndTime: file.recordingEndTime?.toISOString() ?? null,
        ...fileState,
        url,
        urlKind: 'proxied',
        expiresIn: url ? ttl : null,
      });
    }
    views.push({
      recordingId: rec._id,
      callId: rec.callSid,
      ...state,
      durationSeconds: rec.durationSeconds,
      immutable: rec.immutable,
      createdAt: rec.createdAt.toISOString(),
      retentionExpiresAt: rec.retentionExpiresAt.toISOString(),
      files,
    });
  }
  return { view: { sessionId, projectId, ...overallStatus(views, session.status === 'active'), recordings: views }, urlsIssued };
}

/** The answer's status from its recordings': `partial` when some, not all, can be downloaded. */
function overallStatus(recordings: RecordingView[], sessionActive: boolean): Pick<SessionRecordingsView, 'status' | 'unavailableReason' | 'retryable'> {
  if (recordings.length === 0) {
    return sessionActive
      ? { status: 'call_in_progress', unavailableReason: 'call_in_progress', retryable: true }
      : { status: 'media_unavailable', unavailableReason: 'media_not_available', retryable: false };
  }
  const ready = (r: RecordingView) => r.availability === 'available' && r.files.length > 0 && r.files.every((f) => f.url !== null);
  const pending = recordings.filter((r) => !ready(r));
  if (pending.length === 0) return { status: 'success', unavailableReason: null, retryable: false };
  const reasonOf = (r: RecordingView) => r.files.find((f) => f.unavailableReason)?.unavailableReason ?? r.unavailableReason ?? 'media_not_available';
  const first = reasonOf(pending[0]!);
  if (pending.length < recordings.length) return { status: 'partial', unavailableReason: first, retryable: pending.some((r) => isRetryable(reasonOf(r))) };
  const reasons = pending.map(reasonOf);
  if (reasons.includes('call_in_progress')) return { status: 'call_in_progress', unavailableReason: 'call_in_progress', retryable: true };
  if (reasons.includes('media_in_progress')) return { status: 'media_in_progress', unavailableReason: 'media_in_progress', retryable: true };
  return { status: 'media_unavailable', unavailableReason: first, retryable: reasons.some(isRetryable) };
}

// ------------------------------------------------------------------ media

const tokenRefused = () => new DomainError('INVALID_RECORDING_MEDIA_TOKEN', 'The media token is invalid, expired or does not match this URL; list the recordings again for a fresh URL');

/**
 * Whether the key that issued a token may still: it exists, is not revoked or expired, is still
 * bound to the token's project, and its scope (for a scoped key) still grants `recordings.read`.
 * Read by `_id`, one or two point reads per media request.
 */
async function issuingKeyStands(ctx: CoreContext, claims: MediaTokenClaims): Promise<boolean> {
  const key = await ctx.models.ApiKey.findOne({ _id: claims.keyId, tenantId: claims.tenantId }, { revokedAt: 1, expiresAt: 1, projectId: 1, scopeId: 1, permissions: 1 }).lean();
  if (!key || key.revokedAt || (key.expiresAt && key.expiresAt.getTime() <= Date.now()) || key.projectId !== claims.projectId) return false;
  if (!key.scopeId) return true;
  const scope = await ctx.models.ApiScope.findOne({ _id: key.scopeId, tenantId: claims.tenantId }, { grants: 1 }).lean();
  return !!scope && scope.grants.includes('recordings.read');
}

export interface StoredMedia {
  recording: RecordingDoc;
  file: RecordingFileDoc;
  /** The stored object's length, as GridFS has it. */
  length: number;
}

/**
 * The stored file a verified token grants, for the project and recording of the URL: 401 when the
 * token is for another project or recording or its key no longer stands, 404 RECORDING_NOT_FOUND,
 * 409 RECORDING_NOT_READY while the media is being fetched, 404 RECORDING_MEDIA_NOT_FOUND when the
 * recording has no such file, or its stored object is gone.
 */
export async function findRecordingMedia(ctx: CoreContext, claims: MediaTokenClaims, url: { projectId: string; recordingId: string }): Promise<StoredMedia> {
  if (claims.projectId !== url.projectId || claims.recordingId !== url.recordingId) throw tokenRefused();
  if (!(await issuingKeyStands(ctx, claims))) throw tokenRefused();
  const recording = await ctx.models.Recording.findOne({ _id: claims.recordingId, tenantId: claims.tenantId, projectId: claims.projectId }).lean();
  if (!recording) throw new DomainError('RECORDING_NOT_FOUND', 'Recording not found');
  const state = currentAvailability(recording, new Date());
  if (state.availability === 'media_in_progress') throw new DomainError('RECORDING_NOT_READY', 'The recording is not complete yet; try again later');
  const missing = () => new DomainError('RECORDING_MEDIA_NOT_FOUND', 'The recording file is not available');
  if (state.availability !== 'available') throw missing();
  const file = recording.files.find((f) => f.objectIndex === claims.objectIndex);
  if (!file) throw missing();
  const stored = await recordingMediaBucket(ctx.models.connection).find({ _id: file.gridFsId }).limit(1).next();
  if (!stored) throw missing();
  return { recording, file, length: stored.length };
}

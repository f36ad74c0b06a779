// Erasure of a contact (POST /api/contacts/:id/erase): removes the person's data, unlike the soft
// DELETE. The contact record keeps only its id, type and dates (identity and profile cleared);
// the transcripts of its linked sessions keep their shape with every message's text replaced;
// their trace events, memory stores, attachments and call recordings are deleted, as are the
// contact's user-scoped memory facts across the tenant's projects. Idempotent: an erasure cut
// short is finished by the next request. Sessions of the contact still active are ended first (docs/contacts.md, "Erasure").
import { type CoreContext } from '../context';
import { type Principal } from '../../lib/permissions';
import { DomainError } from '../../lib/errors';
import { driverCollection } from '../../db/driver-collection';
import { deleteSessionAttachments } from '../attachments/store';
import { RECORDING_MEDIA_BUCKET } from '../../db/recording';
import { endSessionWorkflow } from '../sessions/end';

/** What a transcript message of an erased contact's session reads afterwards. */
export const ERASED_CONTENT = '[erased]';
const BATCH = 200;

export interface ContactErasure {
  contactId: string;
  erasedAt: Date;
  sessions: number;
  /** Sessions of the contact still active, ended before their data was erased. */
  sessionsEnded: number;
  transcriptMessagesRedacted: number;
  traceEventsDeleted: number;
  memoryFactsDeleted: number;
  memoryStoresDeleted: number;
  recordingsDeleted: number;
}

const PROFILE_CLEARED = {
  identity: null,
  identityType: null,
  displayName: null,
  department: null,
  employeeId: null,
  company: null,
  accountRef: null,
  channel: null,
  metadata: {},
  tags: [],
};

export async function eraseContact(ctx: CoreContext, principal: Principal, contactId: string): Promise<ContactErasure> {
  // A key bound to a project would erase data of every project: the contact is the tenant's.
  if (principal.projectId) throw new DomainError('FORBIDDEN', 'A credential bound to a project cannot erase a contact: erasure reaches every project of the tenant');
  const { tenantId } = principal;
  const models = ctx.models;
  // Live or soft-deleted: a deleted contact still has its data until it is erased.
  const contact = await driverCollection(models.Contact).findOne({ _id: contactId, tenantId });
  if (!contact) throw new DomainError('CONTACT_NOT_FOUND', 'Contact not found');
  const erasedAt = contact.erasedAt ?? new Date();
  await driverCollection(models.Contact).updateOne(
    { _id: contactId, tenantId },
    { $set: { ...PROFILE_CLEARED, liveKey: `erased:${contactId}`, deletedAt: contact.deletedAt ?? erasedAt, erasedAt, updatedAt: new Date() } },
  );
  const outcome: ContactErasure = { contactId, erasedAt, sessions: 0, sessionsEnded: 0, transcriptMessagesRedacted: 0, traceEventsDeleted: 0, memoryFactsDeleted: 0, memoryStoresDeleted: 0, recordingsDeleted: 0 };
  // The linked sessions, a batch at a time; a batch's links go last, so a retry finds what is left.
  for (;;) {
    const links = await driverCollection(models.ContactSession).find({ tenantId, contactId }, { projection: { _id: 1, sessionId: 1 } }).limit(BATCH).toArray();
    if (links.length === 0) break;
    const sessionIds = links.map((l) => l.sessionId);
    const inSessions = { tenantId, sessionId: { $in: sessionIds } };
    // A conversation still going would keep writing: it is ended first (the end signal, then terminate).
    const active = await driverCollection(models.Session).find({ tenantId, _id: { $in: sessionIds }, status: 'active' }, { projection: { _id: 1 } }).toArray();
    for (const session of active) await endSessionWorkflow(ctx, { tenantId, sessionId: session._id }, 'contact erased');
    outcome.sessionsEnded += active.length;
    outcome.transcriptMessagesRedacted += (await driverCollection(models.TranscriptMessage).updateMany({ ...inSessions, content: { $ne: ERASED_CONTENT } }, { $set: { content: ERASED_CONTENT } })).modifiedCount;
    outcome.traceEventsDeleted += (await driverCollection(models.TraceEvent).deleteMany(inSessions)).deletedCount;
    outcome.memoryStoresDeleted += (await driverCollection(models.MemoryStore).deleteMany(inSessions)).deletedCount;
    for (const sessionId of sessionIds) await deleteSessionAttachments(models, { tenantId, sessionId });
    outcome.recordingsDeleted += await deleteSessionRecordings(ctx, tenantId, sessionIds);
    // The channel's user id (an HTTP-async key, a widget user) is the person's identifier too.
    await driverCollection(models.Session).updateMany({ tenantId, _id: { $in: sessionIds }, channelUId: { $ne: null } }, { $set: { channelUId: null } });
    await driverCollection(models.ContactSession).deleteMany({ tenantId, contactId, _id: { $in: links.map((l) => l._id) } });
    outcome.sessions += links.length;
  }
  // What agents remembered about the person, in every project (user scope is keyed by contact id).
  outcome.memoryFactsDeleted = (await driverCollection(models.MemoryFact).deleteMany({ tenantId, scope: 'user', scopeKey: contactId })).deletedCount;
  ctx.logger.info({ tenantId, ...outcome }, 'contact erased');
  return outcome;
}

/** A session's call recordings: the media (GridFS files and chunks) first, then the records. */
async function deleteSessionRecordings(ctx: CoreContext, tenantId: string, sessionIds: string[]): Promise<number> {
  const recordings = await driverCollection(ctx.models.Recording).find({ tenantId, sessionId: { $in: sessionIds } }, { projection: { _id: 1 } }).toArray();
  if (recordings.length === 0) return 0;
  const ids = recordings.map((r) => r._id);
  const db = ctx.models.connection.db!;
  const files = await db.collection(`${RECORDING_MEDIA_BUCKET}.files`).find({ 'metadata.tenantId': tenantId, 'metadata.recordingId': { $in: ids } }, { projection: { _id: 1 } }).toArray();
  if (files.length > 0) {
    await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).deleteMany({ files_id: { $in: files.map((f) => f._id) } });
    await db.collection(`${RECORDING_MEDIA_BUCKET}.files`).deleteMany({ _id: { $in: files.map((f) => f._id) } });
  }
  return (await driverCollection(ctx.models.Recording).deleteMany({ tenantId, _id: { $in: ids } })).deletedCount;
}

// Contact operations (docs/contacts.md): create, list, look up, read, change, soft delete, link a
// session. Every read and write carries the tenant; a deleted contact or another tenant's is
// CONTACT_NOT_FOUND. One live contact per identity is the unique index's doing (db/contact.ts):
// a write that would make a second one fails on the index and answers CONTACT_IDENTITY_CONFLICT,
// so concurrent creates of one identity cannot both succeed.
import { createId } from '@paralleldrive/cuid2';
import { isDuplicateKey } from '../../db/duplicate-key';
import { findOwned } from '../../db/owned';
import {
  CONTACT_IDENTITY_TYPES,
  type ContactDoc,
  type ContactIdentityType,
  type ContactMetadata,
  type ContactType,
  newContactId,
} from '../../db/contact';
import { DomainError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { type CoreContext } from '../context';
import { identityKey, normalisePhone, storedIdentity } from './identity';

/** How many linked session ids GET /api/contacts/:id returns: the most recently linked. */
export const CONTACT_SESSIONS_SHOWN = 100;

export interface ContactFields {
  type?: ContactType;
  identity?: string;
  identityType?: ContactIdentityType;
  displayName?: string | null;
  department?: string | null;
  employeeId?: string | null;
  company?: string | null;
  accountRef?: string | null;
  channel?: string | null;
  metadata?: ContactMetadata;
  tags?: string[];
}

const OPTIONAL_TEXT = ['displayName', 'department', 'employeeId', 'company', 'accountRef', 'channel'] as const;

const notFound = () => new DomainError('CONTACT_NOT_FOUND', 'Contact not found');
const conflict = (identityType: string) =>
  new DomainError('CONTACT_IDENTITY_CONFLICT', `A live contact with this ${identityType} identity already exists`);

/** identity and identityType come together: one without the other is a 400. */
function pairedIdentity(identity: string | undefined, identityType: ContactIdentityType | undefined) {
  if ((identity === undefined) !== (identityType === undefined)) {
    throw new DomainError('VALIDATION_ERROR', 'identity and identityType: give both or neither');
  }
  if (identity === undefined || identityType === undefined) return null;
  const stored = storedIdentity(identity, identityType);
  return { identity: stored, identityType, liveKey: identityKey(stored, identityType) };
}

export async function createContact(ctx: CoreContext, principal: Principal, fields: ContactFields): Promise<ContactDoc> {
  const paired = pairedIdentity(fields.identity, fields.identityType);
  const id = newContactId();
  const now = new Date();
  const doc = {
    _id: id,
    tenantId: principal.tenantId,
    type: fields.type ?? (paired ? 'customer' : 'anonymous'),
    identity: paired?.identity ?? null,
    identityType: paired?.identityType ?? null,
    liveKey: paired?.liveKey ?? `none:${id}`,
    ...Object.fromEntries(OPTIONAL_TEXT.map((f) => [f, fields[f] ?? null])),
    metadata: fields.metadata ?? {},
    tags: fields.tags ?? [],
    firstSeenAt: now,
    lastSeenAt: now,
    deletedAt: null,
  };
  try {
    const created = await ctx.models.Contact.create(doc);
    return created.toObject() as ContactDoc;
  } catch (err) {
    if (isDuplicateKey(err)) throw conflict(paired!.identityType);
    throw err;
  }
}

export interface ContactListQuery {
  type?: ContactType;
  channel?: string;
  limit: number;
  offset: number;
}

/** Live contacts, newest first, with the count of all that match. */
export async function listContacts(ctx: CoreContext, principal: Principal, query: ContactListQuery): Promise<{ contacts: ContactDoc[]; total: number }> {
  const filter = {
    tenantId: principal.tenantId,
    deletedAt: null,
    ...(query.type ? { type: query.type } : {}),
    ...(query.channel ? { channel: query.channel } : {}),
  };
  const [contacts, total] = await Promise.all([
    ctx.models.Contact.find(filter).sort({ createdAt: -1, _id: -1 }).skip(query.offset).limit(query.limit).lean<ContactDoc[]>(),
    ctx.models.Contact.countDocuments(filter),
  ]);
  return { contacts, total };
}

/**
 * The live contact with this identity. Without identityType, every type the value can be read
 * as is tried, in the order email, phone, external, and the first found is returned.
 */
export async function lookupContact(ctx: CoreContext, principal: Principal, identity: string, identityType?: ContactIdentityType): Promise<ContactDoc> {
  const keys: string[] = [];
  for (const type of identityType ? [identityType] : CONTACT_IDENTITY_TYPES) {
    if (type === 'phone') {
      // A value that is no phone number cannot be any contact's phone identity.
      const phone = normalisePhone(identity);
      if (phone) keys.push(identityKey(phone, 'phone'));
    } else {
      keys.push(identityKey(type === 'external' ? identity.trim() : identity, type));
    }
  }
  const found = keys.length ? await ctx.models.Contact.find({ tenantId: principal.tenantId, liveKey: { $in: keys } }).lean<ContactDoc[]>() : [];
  for (const key of keys) {
    const hit = found.find((c) => c.liveKey === key && c.deletedAt === null);
    if (hit) return hit;
  }
  throw notFound();
}

/** A live contact of the caller's tenant, or CONTACT_NOT_FOUND. */
export async function requireContact(ctx: CoreContext, principal: Principal, id: string): Promise<ContactDoc> {
  const doc = await findOwned(ctx.models.Contact, id, { tenantId: principal.tenantId, deletedAt: null });
  if (!doc) throw notFound();
  return doc;
}

/** The ids of the contact's sessions, most recently linked first, at most CONTACT_SESSIONS_SHOWN. */
export async function contactSessionIds(ctx: CoreContext, principal: Principal, contactId: string): Promise<string[]> {
  const links = await ctx.models.ContactSession.find({ tenantId: principal.tenantId, contactId })
    .sort({ linkedAt: -1, _id: -1 })
    .limit(CONTACT_SESSIONS_SHOWN)
    .lean();
  return links.map((l) => l.sessionId);
}

/** Changes only the fields given; a new identity comes with its identityType and is checked as on create (409 when taken). */
export async function updateContact(ctx: CoreContext, principal: Principal, id: string, fields: ContactFields): Promise<ContactDoc> {
  const set: Record<string, unknown> = {};
  const paired = pairedIdentity(fields.identity, fields.identityType);
  if (paired) Object.assign(set, paired);
  if (fields.type !== undefined) set.type = fields.type;
  for (const f of OPTIONAL_TEXT) if (fields[f] !== undefined) set[f] = fields[f];
  if (fields.metadata !== undefined) set.metadata = fields.metadata;
  if (fields.tags !== undefined) set.tags = fields.tags;
  if (Object.keys(set).length === 0) return requireContact(ctx, principal, id);
  try {
    const updated = await ctx.models.Contact.findOneAndUpdate({ _id: id, tenantId: principal.tenantId, deletedAt: null }, { $set: set }, { new: true }).lean<ContactDoc>();
    if (!updated) throw notFound();
    return updated;
  } catch (err) {
    if (isDuplicateKey(err)) throw conflict(String(set.identityType));
    throw err;
  }
}

/** Soft delete: `deletedAt` is set and the identity freed for a new contact; the record stays. */
export async function deleteContact(ctx: CoreContext, principal: Principal, id: string): Promise<void> {
  const res = await ctx.models.Contact.updateOne(
    { _id: id, tenantId: principal.tenantId, deletedAt: null },
    { $set: { deletedAt: new Date(), liveKey: `deleted:${id}` } },
  );
  if (res.matchedCount === 0) throw notFound();
}

/**
 * Links a session of the caller's tenant (and, for a key bound to a project, of that project) to
 * the contact; linking it again changes nothing. Any other session is SESSION_NOT_FOUND.
 */
export async function linkSession(ctx: CoreContext, principal: Principal, contactId: string, sessionId: string): Promise<void> {
  const [, session] = await Promise.all([
    requireContact(ctx, principal, contactId),
    findOwned(ctx.models.Session, sessionId, { tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) }),
  ]);
  if (!session) throw new DomainError('SESSION_NOT_FOUND', 'Session not found');
  try {
    await ctx.models.ContactSession.updateOne(
      { tenantId: principal.tenantId, contactId, sessionId },
      { $setOnInsert: { _id: createId(), linkedAt: new Date() } },
      { upsert: true },
    );
  } catch (err) {
    // Two links of one session at once: the other one stored it.
    if (!isDuplicateKey(err)) throw err;
  }
}

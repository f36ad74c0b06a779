// The runtime's side of contacts (docs/contacts.md "How sessions find their contact"): a session
// whose channel knows who the caller is finds the live contact with that identity, or creates it,
// and is linked to it. What the workflow receives is a SessionContact, never the identity itself.
import { createId } from '@paralleldrive/cuid2';
import { isDuplicateKey } from '../../db/duplicate-key';
import { type ContactDoc, type ContactIdentityType, newContactId } from '../../db/contact';
import { isDomainError } from '../../lib/errors';
import { type SessionChannel, type SessionContact } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { normalizedCallerNumber } from '../telephony/caller-number';
import { identityKey, normalisePhone, storedIdentity } from './identity';

/** Who started a session, as its channel knows them. */
export interface SessionCaller {
  identity: string;
  identityType: ContactIdentityType;
  /** Given to a contact this creates; an existing contact keeps its own. */
  displayName?: string | null;
}

export interface ContactForSessionInput extends SessionCaller {
  tenantId: string;
  projectId: string;
  sessionId: string;
  channel: SessionChannel;
}

/** The type a contact the runtime creates gets: a caller the tenant's systems did not describe. */
export const LINKED_CONTACT_TYPE = 'customer' as const;

/** Longest identity a channel may hand in (the contacts API's limit); longer is not linked. */
const IDENTITY_MAX = 320;

// ------------------------------------------------------------------ what each channel names

/** An HTTP-async conversation: its canonical session key (also the session's `channelUId`). */
export function httpAsyncCaller(sessionKey: string | null | undefined): SessionCaller | null {
  return sessionKey?.trim() ? { identity: sessionKey, identityType: 'external' } : null;
}

/**
 * Twilio's stand-ins for a withheld number: ANONYMOUS, RESTRICTED, UNKNOWN and UNAVAILABLE on a
 * phone keypad. Every caller who hides their number would otherwise share one contact.
 */
const WITHHELD_NUMBERS = new Set(['+266696687', '+7378742833', '+8656696', '+86282452253']);

/**
 * The person on a call (who called in, or whom an outbound call reached): an E.164 number (any
 * spelling the contacts API accepts) is a `phone` identity; a provider app client (`client:ada`)
 * or a SIP address is an `external` identity in the spelling calls are indexed by
 * (core/telephony/caller-number.ts); a withheld number, or anything else, names nobody.
 */
export function voiceCaller(number: string | null | undefined): SessionCaller | null {
  const text = (number ?? '').trim();
  if (!text) return null;
  const phone = normalisePhone(text);
  if (phone) return WITHHELD_NUMBERS.has(phone) ? null : { identity: phone, identityType: 'phone' };
  if (/^(client|sips?):/i.test(text)) return { identity: normalizedCallerNumber(text), identityType: 'external' };
  return null;
}

/** An agentic-app session's `userReference`: the caller's own id for its user. */
export function appUserCaller(userReference: string | null | undefined): SessionCaller | null {
  return userReference?.trim() ? { identity: userReference, identityType: 'external' } : null;
}

/** A chat test's `testContext.callerContext.userId` (POST /api/v1/chat/agent, with agent:write). */
export function testCaller(userId: string | null | undefined): SessionCaller | null {
  return userId?.trim() ? { identity: userId, identityType: 'external' } : null;
}

/**
 * The signed-in user of a widget or SDK session. The SDK's session start (POST /api/v1/sdk/init
 * and its first turn, not built yet) calls this and passes the result as `caller` to
 * startSession: the SDK names its user by e-mail, phone number or its own user id, in that order.
 */
export function sdkUserCaller(user: { email?: string | null; phone?: string | null; userId?: string | null; displayName?: string | null } | null | undefined): SessionCaller | null {
  if (!user) return null;
  const displayName = user.displayName ?? null;
  if (user.email?.trim()) return { identity: user.email.trim(), identityType: 'email', displayName };
  if (user.phone?.trim()) return { identity: user.phone, identityType: 'phone', displayName };
  if (user.userId?.trim()) return { identity: user.userId, identityType: 'external', displayName };
  return null;
}

// ------------------------------------------------------------------ find or create, link

/** What the workflow carries of a contact: no identity value. */
export function toSessionContact(doc: Pick<ContactDoc, '_id' | 'type' | 'identityType' | 'displayName' | 'company' | 'department' | 'accountRef' | 'tags'>): SessionContact {
  return {
    contactId: doc._id,
    type: doc.type,
    // A contact found by identity has one; the fallback only satisfies the type.
    identityType: doc.identityType ?? 'external',
    displayName: doc.displayName ?? null,
    company: doc.company ?? null,
    department: doc.department ?? null,
    accountRef: doc.accountRef ?? null,
    tags: [...(doc.tags ?? [])],
  };
}

/**
 * What a failed link logs: the error's kind, never its message (a duplicate-key message quotes
 * the key, which holds the identity) nor the identity.
 */
function loggable(err: unknown): Record<string, unknown> {
  if (isDomainError(err)) return { code: err.code };
  const e = err as { name?: unknown; code?: unknown; codeName?: unknown };
  return { name: typeof e?.name === 'string' ? e.name : typeof err, ...(e?.code !== undefined ? { code: e.code } : {}), ...(typeof e?.codeName === 'string' ? { codeName: e.codeName } : {}) };
}

/**
 * The live contact of the caller's identity, created when there is none, with `lastSeenAt` moved
 * to now. A known identity costs one round trip (findOneAndUpdate on the unique {tenantId,
 * liveKey}); a new one a second (the insert). Two first sessions of one identity at once both
 * insert; the unique index lets one through and refuses the other (a duplicate key), which then
 * takes the winner's contact. A deleted contact has left the key, so it is never found: a new one
 * is made. Not an upsert: the dev store (FerretDB 1.24) leaves the null and empty fields of an
 * upsert's `$setOnInsert` out of the document it inserts, and a contact without `deletedAt: null`
 * would not be found by the API's lookup. Null (logged, without the identity) when the identity
 * is not of its type or the store fails: the session starts without a contact.
 */
export async function findSessionContact(ctx: CoreContext, input: Omit<ContactForSessionInput, 'sessionId' | 'projectId'> & { sessionId?: string }): Promise<SessionContact | null> {
  try {
    if (input.identity.length > IDENTITY_MAX) throw Object.assign(new Error('identity too long'), { name: 'IdentityTooLong' });
    const identity = storedIdentity(input.identity, input.identityType);
    const liveKey = identityKey(identity, input.identityType);
    const now = new Date();
    const filter = { tenantId: input.tenantId, liveKey };
    // An identity seen before (the usual case) is one round trip: its contact, lastSeenAt moved.
    const seen = () => ctx.models.Contact.findOneAndUpdate(filter, { $set: { lastSeenAt: now } }, { new: true, lean: true });
    let doc: ContactDoc | null = await seen();
    if (!doc) {
      try {
        const created = await ctx.models.Contact.create({
          _id: newContactId(),
          ...filter,
          type: LINKED_CONTACT_TYPE,
          identity,
          identityType: input.identityType,
          displayName: input.displayName?.trim().slice(0, 200) || null,
          channel: input.channel,
          firstSeenAt: now,
          lastSeenAt: now,
          deletedAt: null,
        });
        doc = created.toObject() as ContactDoc;
      } catch (err) {
        // Another session of the same identity created it a moment ago: this one takes it.
        if (!isDuplicateKey(err)) throw err;
        doc = await seen();
      }
    }
    return doc ? toSessionContact(doc) : null;
  } catch (err) {
    ctx.logger.warn({ err: loggable(err), tenantId: input.tenantId, sessionId: input.sessionId, channel: input.channel, identityType: input.identityType }, 'the session starts without a contact: its caller could not be linked');
    return null;
  }
}

/**
 * Records that the session belongs to the contact (what GET /api/contacts/:id lists); recording it
 * again changes nothing. A failure is logged: the session goes on, unlisted under its contact.
 */
export async function linkSessionToContact(ctx: CoreContext, link: { tenantId: string; contactId: string; sessionId: string }): Promise<void> {
  try {
    await ctx.models.ContactSession.updateOne(link, { $setOnInsert: { _id: createId(), linkedAt: new Date() } }, { upsert: true });
  } catch (err) {
    // Two starts of one session at once: the other one stored it.
    if (isDuplicateKey(err)) return;
    ctx.logger.warn({ err: loggable(err), tenantId: link.tenantId, sessionId: link.sessionId, contactId: link.contactId }, 'a session could not be listed under its contact');
  }
}

/** Takes a link back: the session it named was never started. */
export async function unlinkSession(ctx: CoreContext, link: { tenantId: string; contactId: string; sessionId: string }): Promise<void> {
  await ctx.models.ContactSession.deleteOne(link).catch((err: unknown) =>
    ctx.logger.warn({ err: loggable(err), sessionId: link.sessionId }, 'could not remove the contact link of an unstarted session'),
  );
}

/**
 * Finds or creates the session's contact and links the session to it, in that order; null when
 * the caller could not be linked (the session starts without a contact). startSession and the
 * first chat turn run the two halves apart, overlapped with their own writes.
 */
export async function contactForSession(ctx: CoreContext, input: ContactForSessionInput): Promise<SessionContact | null> {
  const contact = await findSessionContact(ctx, input);
  if (contact) await linkSessionToContact(ctx, { tenantId: input.tenantId, contactId: contact.contactId, sessionId: input.sessionId });
  return contact;
}

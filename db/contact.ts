// Contacts: a tenant's end-user identities (an employee, a customer, an anonymous caller), found
// by their identity (an e-mail, a phone number or an external id) and linked to sessions. DELETE
// is a soft delete (`deletedAt`). One live contact per tenant + identityType + identity is held by
// a unique index on `liveKey` (the normalised identity while live, a key naming the contact once
// deleted or when it has no identity), because the dev store has no partial unique indexes.
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';

export const CONTACT_TYPES = ['employee', 'customer', 'anonymous'] as const;
export type ContactType = (typeof CONTACT_TYPES)[number];

export const CONTACT_IDENTITY_TYPES = ['email', 'phone', 'external'] as const;
export type ContactIdentityType = (typeof CONTACT_IDENTITY_TYPES)[number];

export const CONTACT_ID_PREFIX = 'ct_';
export const newContactId = (): string => CONTACT_ID_PREFIX + createId();

export type ContactMetadata = Record<string, string | number | boolean | null>;

export interface ContactDoc {
  _id: string;
  tenantId: string;
  type: ContactType;
  /** As stored: an e-mail as sent (trimmed), a phone number in E.164, an external id as sent. */
  identity: string | null;
  identityType: ContactIdentityType | null;
  /**
   * `<identityType>:<normalised identity>` while the contact is live (e-mails lower-cased);
   * `none:<id>` for a contact without identity and `deleted:<id>` once deleted, which no other
   * contact can hold.
   */
  liveKey: string;
  displayName: string | null;
  department: string | null;
  employeeId: string | null;
  company: string | null;
  accountRef: string | null;
  channel: string | null;
  metadata: ContactMetadata;
  tags: string[];
  firstSeenAt: Date;
  lastSeenAt: Date;
  deletedAt: Date | null;
  /** When the contact was erased (POST /api/contacts/:id/erase): its identity and profile are gone, the record a tombstone. */
  erasedAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const ContactSchema = new Schema<ContactDoc>(
  {
    _id: { type: String, default: newContactId },
    tenantId: { type: String, required: true },
    type: { type: String, required: true, enum: CONTACT_TYPES },
    identity: { type: String, default: null },
    identityType: { type: String, default: null, enum: [...CONTACT_IDENTITY_TYPES, null] },
    liveKey: { type: String, required: true },
    displayName: { type: String, default: null },
    department: { type: String, default: null },
    employeeId: { type: String, default: null },
    company: { type: String, default: null },
    accountRef: { type: String, default: null },
    channel: { type: String, default: null },
    metadata: { type: Schema.Types.Mixed, default: () => ({}) },
    tags: { type: [String], default: () => [] },
    firstSeenAt: { type: Date, required: true },
    lastSeenAt: { type: Date, required: true },
    deletedAt: { type: Date, default: null },
    erasedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
// One live contact per identity; lookups by identity.
ContactSchema.index({ tenantId: 1, liveKey: 1 }, { unique: true });
// A tenant's contacts, newest first.
ContactSchema.index({ tenantId: 1, createdAt: -1 });

export type ContactModel = Model<ContactDoc>;
export const contactModel = (c: Connection): ContactModel => c.model<ContactDoc>('Contact', ContactSchema, 'contacts');

/** A session linked to a contact (POST /api/contacts/:id/link-session); linking again is a no-op. */
export interface ContactSessionDoc {
  _id: string;
  tenantId: string;
  contactId: string;
  sessionId: string;
  linkedAt: Date;
}

const ContactSessionSchema = new Schema<ContactSessionDoc>(
  {
    _id: { type: String, default: () => createId() },
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    sessionId: { type: String, required: true },
    linkedAt: { type: Date, required: true },
  },
  { versionKey: false },
);
ContactSessionSchema.index({ tenantId: 1, contactId: 1, sessionId: 1 }, { unique: true });
// A contact's sessions, most recently linked first.
ContactSessionSchema.index({ tenantId: 1, contactId: 1, linkedAt: -1 });

export type ContactSessionModel = Model<ContactSessionDoc>;
export const contactSessionModel = (c: Connection): ContactSessionModel =>
  c.model<ContactSessionDoc>('ContactSession', ContactSessionSchema, 'contact_sessions');

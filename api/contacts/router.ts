// Contacts (/api/contacts): a tenant's end-user identities, looked up by e-mail, phone number or
// external id and linked to sessions. Reads need contact:read, changes contact:write (both in
// `admin`). DELETE is a soft delete. docs/contacts.md.
import { type ContactDoc } from '../../db/contact';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZSuccessOnly } from '../http/schemas';
import {
  ZContactIdParam,
  ZContactResponse,
  ZContactWithSessionsResponse,
  ZCreateContactRequest,
  ZLinkSessionRequest,
  ZListContactsQuery,
  ZListContactsResponse,
  ZLookupContactQuery,
  ZUpdateContactRequest,
} from './schemas';
import {
  contactSessionIds,
  createContact,
  deleteContact,
  linkSession,
  listContacts,
  lookupContact,
  requireContact,
  updateContact,
} from '../../core/contacts/contacts';

const TAGS = ['Contacts'];
const BASE = '/api/contacts';
const ONE = `${BASE}/:id`;
/** `lookup` is a route of its own, never a contact id. */
const RESERVED = { id: ['lookup'] } as const;
const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

function present(doc: ContactDoc) {
  return {
    id: doc._id,
    tenantId: doc.tenantId,
    type: doc.type,
    identity: doc.identity ?? null,
    identityType: doc.identityType ?? null,
    displayName: doc.displayName ?? null,
    department: doc.department ?? null,
    employeeId: doc.employeeId ?? null,
    company: doc.company ?? null,
    accountRef: doc.accountRef ?? null,
    channel: doc.channel ?? null,
    metadata: doc.metadata ?? {},
    tags: doc.tags ?? [],
    firstSeenAt: iso(doc.firstSeenAt)!,
    lastSeenAt: iso(doc.lastSeenAt)!,
    deletedAt: iso(doc.deletedAt),
    createdAt: iso(doc.createdAt)!,
    updatedAt: iso(doc.updatedAt)!,
  };
}

export const contactRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: BASE,
    operationId: 'createContact',
    summary: 'Create a contact (an end-user identity of the tenant)',
    description:
      'One live contact per identity and identityType: 409 CONTACT_IDENTITY_CONFLICT when one exists (e-mails compared case-insensitively, phone numbers in E.164). ' +
      '400 INVALID_PHONE_NUMBER for a phone identity that is not E.164; 400 when identity comes without identityType or the other way round.',
    tags: TAGS,
    auth: 'contact:write',
    body: ZCreateContactRequest,
    bodyExample: { type: 'customer', identity: 'ada@example.com', identityType: 'email', displayName: 'Ada Lovelace', company: 'Analytical Engines', tags: ['vip'], metadata: { plan: 'gold' } },
    bodyOptional: true,
    successStatus: 201,
    response: ZContactResponse,
    links: linksTo(['getContact', 'updateContact', 'deleteContact', 'linkContactSession'], { id: '$response.body#/data/id' }),
    errorStatuses: [409],
    async handler({ ctx, principal, body }) {
      return { success: true, data: present(await createContact(ctx, principal, body)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: BASE,
    operationId: 'listContacts',
    summary: "The tenant's contacts, newest first (deleted ones left out)",
    tags: TAGS,
    auth: 'contact:read',
    query: ZListContactsQuery,
    response: ZListContactsResponse,
    async handler({ ctx, principal, query }) {
      const { contacts, total } = await listContacts(ctx, principal, query);
      return { success: true, data: contacts.map(present), total };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/lookup`,
    operationId: 'lookupContact',
    summary: 'The live contact with an identity',
    description: '404 CONTACT_NOT_FOUND when no live contact has it (also for a value that cannot be of the identityType asked for).',
    tags: TAGS,
    auth: 'contact:read',
    query: ZLookupContactQuery,
    response: ZContactResponse,
    errorStatuses: [404],
    async handler({ ctx, principal, query }) {
      return { success: true, data: present(await lookupContact(ctx, principal, query.identity, query.identityType)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operationId: 'getContact',
    summary: 'A contact and the sessions linked to it (the 100 most recently linked)',
    tags: TAGS,
    auth: 'contact:read',
    params: ZContactIdParam,
    reservedParams: RESERVED,
    response: ZContactWithSessionsResponse,
    errorStatuses: [404],
    async handler({ ctx, principal, params }) {
      const [doc, sessionIds] = await Promise.all([requireContact(ctx, principal, params.id), contactSessionIds(ctx, principal, params.id)]);
      return { success: true, data: { ...present(doc), sessionIds } };
    },
  }),
  defineRoute({
    method: 'put',
    path: ONE,
    operationId: 'updateContact',
    summary: 'Change a contact: only the fields given change',
    description: '409 CONTACT_IDENTITY_CONFLICT when the new identity belongs to another live contact.',
    tags: TAGS,
    auth: 'contact:write',
    params: ZContactIdParam,
    reservedParams: RESERVED,
    body: ZUpdateContactRequest,
    bodyExample: { displayName: 'Ada King', tags: ['vip', 'beta'] },
    bodyOptional: true,
    response: ZContactResponse,
    errorStatuses: [404, 409],
    async handler({ ctx, principal, params, body }) {
      return { success: true, data: present(await updateContact(ctx, principal, params.id, body)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: ONE,
    operationId: 'deleteContact',
    summary: 'Soft-delete a contact: it is hidden from reads and lookups and its identity may be reused',
    tags: TAGS,
    auth: 'contact:write',
    params: ZContactIdParam,
    reservedParams: RESERVED,
    response: ZSuccessOnly,
    errorStatuses: [404],
    async handler({ ctx, principal, params }) {
      await deleteContact(ctx, principal, params.id);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/link-session`,
    operationId: 'linkContactSession',
    summary: 'Link a session of the tenant to the contact (linking it again changes nothing)',
    description: '404 CONTACT_NOT_FOUND or SESSION_NOT_FOUND for a contact or session that is not the caller\'s to see.',
    tags: TAGS,
    auth: 'contact:write',
    params: ZContactIdParam,
    reservedParams: RESERVED,
    body: ZLinkSessionRequest,
    bodyExample: { sessionId: '0b6f1f4e-3c1a-4a8e-9d55-2f1f5c0e7a21' },
    response: ZSuccessOnly,
    errorStatuses: [404],
    async handler({ ctx, principal, params, body }) {
      await linkSession(ctx, principal, params.id, body.sessionId);
      return { success: true };
    },
  }),
];

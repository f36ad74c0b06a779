// Zod schemas of the contact routes (docs/contacts.md): the spec's fields and limits.
import { z } from 'zod';
import '../openapi/registry';
import { CONTACT_IDENTITY_TYPES, CONTACT_TYPES } from '../../db/contact';
import { NOT_BLANK_PATTERN, trimmedText, ZLimitQuery, ZOffsetQuery } from '../http/schemas';

export const CONTACT_LIMITS = {
  displayName: 200,
  company: 200,
  employeeId: 100,
  department: 200,
  accountRef: 200,
  channel: 64,
  identity: 320,
  tags: 50,
  tag: 50,
  metadataKeys: 50,
  metadataKey: 100,
  metadataValue: 1000,
} as const;

const ZType = z.enum(CONTACT_TYPES).describe('`employee`, `customer` or `anonymous`');
const ZIdentityType = z.enum(CONTACT_IDENTITY_TYPES).describe('`email`, `phone` or `external`');
const ZIdentity = z
  .string()
  .min(1)
  .max(CONTACT_LIMITS.identity)
  .regex(NOT_BLANK_PATTERN, 'must not be blank')
  .describe(
    'An e-mail address (compared case-insensitively), a phone number (stored in E.164; white space, dashes, dots and brackets are dropped and a leading 00 is read as +; otherwise 400 INVALID_PHONE_NUMBER) or an external id (compared exactly, stored trimmed). Sent together with identityType',
  );
/** White space (as `trim()` and `\s` know it) and the separators a phone number may be written with. */
const SEP = '[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff.()-]';
/** Exactly the phone identities core/contacts/identity.ts reads as E.164: `+` or `00`, then 2-15 digits, the first not 0. */
export const PHONE_IDENTITY_PATTERN = `^${SEP}*(\\+|0${SEP}*0)${SEP}*[1-9](${SEP}*[0-9]){1,14}${SEP}*$`;
/**
 * What the body schema states about identity (JSON Schema 2020-12, as OpenAPI 3.1 takes it), so
 * that a body the document allows is accepted: identity and identityType come together, an email
 * identity is an e-mail address, a phone identity a phone number.
 */
const IDENTITY_RULES = {
  dependentRequired: { identity: ['identityType'], identityType: ['identity'] },
  allOf: [
    { if: { properties: { identityType: { const: 'email' } }, required: ['identityType'] }, then: { properties: { identity: { pattern: z.regexes.email.source } } } },
    { if: { properties: { identityType: { const: 'phone' } }, required: ['identityType'] }, then: { properties: { identity: { pattern: PHONE_IDENTITY_PATTERN } } } },
  ],
};
const text = (max: number, what: string) => trimmedText(max).nullable().describe(`${what} (max ${max} chars); null clears it`);
/** A metadata key MongoDB can store as a field name: no leading `$`, no `.`. */
const METADATA_KEY = /^[^$.][^.]*$/;
const ZMetadata = z
  .record(
    z.string().min(1).max(CONTACT_LIMITS.metadataKey).regex(METADATA_KEY, 'must not start with $ or contain a dot'),
    z.union([z.string().max(CONTACT_LIMITS.metadataValue), z.number(), z.boolean(), z.null()]),
  )
  .refine((m) => Object.keys(m).length <= CONTACT_LIMITS.metadataKeys, { message: `at most ${CONTACT_LIMITS.metadataKeys} keys` })
  // The key rule stated in the document too (zod's record does not say it).
  .openapi({
    maxProperties: CONTACT_LIMITS.metadataKeys,
    propertyNames: { type: 'string', minLength: 1, maxLength: CONTACT_LIMITS.metadataKey, pattern: METADATA_KEY.source },
  } as object)
  .describe(`Free key-value pairs: at most ${CONTACT_LIMITS.metadataKeys} keys, values strings (max ${CONTACT_LIMITS.metadataValue} chars), numbers, booleans or null; replaced as a whole`);
const ZTags = z
  .array(z.string().min(1).max(CONTACT_LIMITS.tag))
  .max(CONTACT_LIMITS.tags)
  .describe(`At most ${CONTACT_LIMITS.tags} tags of at most ${CONTACT_LIMITS.tag} chars; replaced as a whole`);

const fields = {
  type: ZType.optional().describe('`employee`, `customer` or `anonymous`; default `customer` with an identity, `anonymous` without'),
  identity: ZIdentity.optional(),
  identityType: ZIdentityType.optional().describe('`email`, `phone` or `external`; needs identity'),
  displayName: text(CONTACT_LIMITS.displayName, 'Display name').optional(),
  department: text(CONTACT_LIMITS.department, 'Department, for employees').optional(),
  employeeId: text(CONTACT_LIMITS.employeeId, 'Employee id').optional(),
  company: text(CONTACT_LIMITS.company, 'Company').optional(),
  accountRef: text(CONTACT_LIMITS.accountRef, 'Reference of the account in another system').optional(),
  channel: text(CONTACT_LIMITS.channel, 'Primary channel, e.g. voice or web').optional(),
  metadata: ZMetadata.optional(),
  tags: ZTags.optional(),
};

export const ZCreateContactRequest = z
  .object(fields)
  .strict()
  .openapi('CreateContactRequest', { description: 'Every field optional; identity and identityType go together (400 otherwise)', ...IDENTITY_RULES } as object);

export const ZUpdateContactRequest = z
  .object({ ...fields, type: ZType.optional() })
  .strict()
  .openapi('UpdateContactRequest', {
    description: 'Only the fields given change; null clears a text field. A new identity is sent with its identityType and checked as on create (409 when a live contact holds it)',
    ...IDENTITY_RULES,
  } as object);

export const ZContactIdParam = z.object({ id: z.string().min(1).max(64).describe('Contact id (`ct_…`)') });

export const ZListContactsQuery = z.object({
  type: ZType.optional().describe('Only contacts of this type'),
  channel: z.string().min(1).max(CONTACT_LIMITS.channel).optional().describe('Only contacts with this primary channel'),
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
});

export const ZLookupContactQuery = z.object({
  identity: z
    .string()
    .min(1)
    .max(CONTACT_LIMITS.identity)
    .describe('The identity, compared as stored: e-mails case-insensitively, phone numbers in E.164 (written with separators or 00 too); one that cannot be of the type is simply not found (404)'),
  identityType: ZIdentityType.optional().describe('Omitted: tried as email, then phone, then external'),
});

export const ZLinkSessionRequest = z
  .object({ sessionId: z.string().min(1).max(128).describe('A session of the same tenant (and of the key\'s project, for a key bound to one)') })
  .strict()
  .openapi('LinkContactSessionRequest');

export const ZContact = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    type: ZType,
    identity: z.string().nullable(),
    identityType: ZIdentityType.nullable(),
    displayName: z.string().nullable(),
    department: z.string().nullable(),
    employeeId: z.string().nullable(),
    company: z.string().nullable(),
    accountRef: z.string().nullable(),
    channel: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    tags: z.array(z.string()),
    firstSeenAt: z.string(),
    lastSeenAt: z.string(),
    deletedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Contact');

export const ZContactResponse = z.object({ success: z.literal(true), data: ZContact });

export const ZContactWithSessionsResponse = z.object({
  success: z.literal(true),
  data: ZContact.extend({
    sessionIds: z.array(z.string()).describe('The linked sessions, most recently linked first, at most 100'),
  }).openapi('ContactWithSessions'),
});

export const ZListContactsResponse = z.object({
  success: z.literal(true),
  data: z.array(ZContact),
  total: z.number().int().min(0),
});

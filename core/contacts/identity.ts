// How a contact's identity is compared: e-mails case-insensitively, phone numbers in E.164 (spaces,
// dashes, dots and brackets dropped, a leading 00 read as +), external ids exactly as sent. The
// normalised form is both what a phone identity is stored as and the contact's `liveKey`.
import { z } from 'zod';
import { DomainError } from '../../lib/errors';
import { isE164 } from '../../lib/phone';
import { type ContactIdentityType } from '../../db/contact';

/** The same rule as the API's e-mail check elsewhere (zod's). */
const EMAIL = z.regexes.email;

/** A phone number in E.164, or null when it cannot be read as one. */
export function normalisePhone(raw: string): string | null {
  let number = raw.replace(/[\s\-.()]/g, '');
  if (number.startsWith('00')) number = '+' + number.slice(2);
  return isE164(number) ? number : null;
}

/**
 * The identity as stored: an e-mail address as sent, a phone number in E.164, an external id
 * trimmed; 400 when it is not of its type (the API's schema states the same rules).
 */
export function storedIdentity(identity: string, identityType: ContactIdentityType): string {
  if (identityType === 'phone') {
    const phone = normalisePhone(identity);
    if (!phone) throw new DomainError('INVALID_PHONE_NUMBER', 'identity: a phone identity must be an E.164 number such as +15551234567 (spaces, dashes, dots and brackets are ignored; 00 is read as +)');
    return phone;
  }
  if (identityType === 'email') {
    if (!EMAIL.test(identity)) throw new DomainError('VALIDATION_ERROR', 'identity: an email identity must be an e-mail address such as ada@example.com');
    return identity;
  }
  return identity.trim();
}

/** The key one live contact holds: type and the identity in its compared form. */
export function identityKey(storedValue: string, identityType: ContactIdentityType): string {
  return `${identityType}:${identityType === 'email' ? storedValue.toLowerCase() : storedValue}`;
}

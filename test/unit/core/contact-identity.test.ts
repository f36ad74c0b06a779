// The phone identities the API's document allows (PHONE_IDENTITY_PATTERN) are exactly those the
// core reads as E.164, so a body the document allows is never refused and the other way round.
import { PHONE_IDENTITY_PATTERN } from '../../../api/contacts/schemas';
import { identityKey, normalisePhone, storedIdentity } from '../../../core/contacts/identity';

const documented = new RegExp(PHONE_IDENTITY_PATTERN);

const samples: [string, string | null][] = [
  ['+15551234567', '+15551234567'],
  ['+1 (555) 123-4567', '+15551234567'],
  ['0015551234567', '+15551234567'],
  ['0 0 1.555.123.4567', '+15551234567'],
  ['\t+44 20 7946 0958\u00a0', '+442079460958'],
  ['(+49) 30-1234567', '+49301234567'],
  ['+12', '+12'],
  ['+123456789012345', '+123456789012345'],
  ['+1234567890123456', null],
  ['+1', null],
  ['+0155512345', null],
  ['000155512345', null],
  ['15551234567', null],
  ['0555 123 456', null],
  ['+1 555 CALL', null],
  ['+1_5551234567', null],
  ['+', null],
];

it.each(samples)('reads %j as %j, and the document agrees', (raw, e164) => {
  expect(normalisePhone(raw)).toBe(e164);
  expect(documented.test(raw)).toBe(e164 !== null);
});

it('compares e-mails case-insensitively and keeps them as sent', () => {
  expect(storedIdentity('Ada@Example.COM', 'email')).toBe('Ada@Example.COM');
  expect(identityKey('Ada@Example.COM', 'email')).toBe(identityKey('ada@example.com', 'email'));
  expect(() => storedIdentity(' ada@example.com', 'email')).toThrow(/e-mail/);
  expect(identityKey('Cust-1', 'external')).not.toBe(identityKey('cust-1', 'external'));
  expect(storedIdentity('  Cust-1 ', 'external')).toBe('Cust-1');
});

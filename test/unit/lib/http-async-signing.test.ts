// HTTP-async callback signing: the header format, the receiver's check (the library's and the
// documented example's agree), and what fails it: another body, timestamp, secret or a stale time.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { computeSignature, newSigningSecret, signatureHeaders, verifySignature } from '../../../lib/http-async/signing';
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';

const SECRET = 'whsec_test-secret';
const BODY = JSON.stringify({ message_id: 'ham-1', response: 'hé' });

it('signs HMAC-SHA256 of "timestamp.rawBody" as sha256=<hex>, with the timestamp in seconds', () => {
  const headers = signatureHeaders(SECRET, BODY, 1_700_000_000_999);
  expect(headers['X-ABL-Timestamp']).toBe('1700000000');
  const expected = createHmac('sha256', SECRET).update(`1700000000.${BODY}`, 'utf8').digest('hex');
  expect(headers['X-ABL-Signature']).toBe(`sha256=${expected}`);
  expect(computeSignature(SECRET, 1700000000, Buffer.from(BODY))).toBe(`sha256=${expected}`);
});

it('verifies with the library and with the documented example alike, and refuses any change', () => {
  const now = 1_700_000_000_000;
  const h = signatureHeaders(SECRET, BODY, now);
  const ts = h['X-ABL-Timestamp']!;
  const sig = h['X-ABL-Signature']!;
  const cases: Array<[string, string, string, string | undefined, number, boolean]> = [
    ['as sent', SECRET, BODY, sig, now, true],
    ['another body', SECRET, BODY + ' ', sig, now, false],
    ['another secret', 'whsec_other', BODY, sig, now, false],
    ['no signature', SECRET, BODY, undefined, now, false],
    ['a truncated signature', SECRET, BODY, sig.slice(0, -2), now, false],
    ['5 minutes later', SECRET, BODY, sig, now + 300_000, true],
    ['past the tolerance', SECRET, BODY, sig, now + 301_000, false],
  ];
  for (const [label, secret, body, signature, at, ok] of cases) {
    expect([label, verifySignature({ secret, timestamp: ts, signature, rawBody: body, nowMs: at })]).toEqual([label, ok]);
    expect([label, verifyAblSignature(secret, body, ts, signature, at / 1000)]).toEqual([label, ok]);
  }
  expect(verifySignature({ secret: SECRET, timestamp: String(Number(ts) + 1), signature: sig, rawBody: BODY, nowMs: now })).toBe(false);
  expect(verifyAblSignature(SECRET, BODY, 'abc', sig, now / 1000)).toBe(false);
});

it('makes distinct secrets of 32 random bytes', () => {
  const a = newSigningSecret();
  expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  expect(newSigningSecret()).not.toBe(a);
});

it('documents the verification code exactly as the example the tests run', () => {
  const read = (file: string) => readFileSync(path.join(__dirname, '../../..', file), 'utf8');
  const code = read('examples/http-async/verify-signature.ts').split('\n').slice(3).join('\n').trim();
  expect(read('docs/http-async.md')).toContain(code);
});

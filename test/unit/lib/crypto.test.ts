// Password hashing, constant-time comparison and per-tenant encryption.
import { hashPassword, safeEqual, verifyPassword } from '../../../lib/crypto';
import { Encryptor } from '../../../lib/encryption';
import { parseKeyRing } from '../../../lib/key-ring';
import { newApiKey, API_KEY_PATTERN } from '../../../lib/ids';

it('hashes passwords with a salt and verifies them', async () => {
  const a = await hashPassword('correct horse battery staple');
  const b = await hashPassword('correct horse battery staple');
  expect(a).not.toBe(b);
  expect(a.startsWith('scrypt$')).toBe(true);
  expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
  expect(await verifyPassword('wrong', a)).toBe(false);
  expect(await verifyPassword('x', 'garbage')).toBe(false);
});

it('compares strings in constant time, including different lengths', () => {
  expect(safeEqual('abc', 'abc')).toBe(true);
  expect(safeEqual('abc', 'abd')).toBe(false);
  expect(safeEqual('abc', 'abcd')).toBe(false);
});

it('makes API keys of the documented shape', () => {
  const keys = new Set(Array.from({ length: 50 }, newApiKey));
  expect(keys.size).toBe(50);
  for (const k of keys) expect(k).toMatch(API_KEY_PATTERN);
});

it('encrypts per tenant and purpose, and detects tampering', () => {
  const enc = new Encryptor(parseKeyRing(`k1:${Buffer.alloc(32, 7).toString('base64')}`));
  const sealed = enc.encrypt('tenant-a', 'tool-secret', 's3cret');
  expect(JSON.stringify(sealed)).not.toContain('s3cret');
  expect(enc.decrypt('tenant-a', 'tool-secret', sealed)).toBe('s3cret');
  expect(() => enc.decrypt('tenant-b', 'tool-secret', sealed)).toThrow();
  expect(() => enc.decrypt('tenant-a', 'llm-credential', sealed)).toThrow();
  const tampered = { ...sealed, data: Buffer.from('x' + Buffer.from(sealed.data, 'base64').toString('latin1'), 'latin1').toString('base64') };
  expect(() => enc.decrypt('tenant-a', 'tool-secret', tampered)).toThrow();
});

// Envelope encryption: which master keys configuration yields, and that wrapped data keys and
// sealed values open only with the right key and the same additional data.
import { randomBytes } from 'node:crypto';
import { DATA_KEY_SCHEME, ENCRYPTION_KEY_MASTER_ID, isCurrentWrapping, newDataKey, seal, secretMasterKeyRing, unseal, UnknownMasterKeyError, unwrapDataKey, wrapDataKey } from '../../../lib/secret-envelope';
import { deriveKey, KEY_PURPOSE } from '../../../lib/master-keys';
import { parseKeyRing } from '../../../lib/key-ring';

const b64 = () => randomBytes(32).toString('base64');

it('takes the master key ring (SECRET_MASTER_KEYS is its former name), else ENCRYPTION_KEY under a fixed id, else none', () => {
  const ring = secretMasterKeyRing({ SECRET_MASTER_KEYS: `k2:${b64()},k1:${b64()}`, ENCRYPTION_KEY: b64() });
  expect(ring?.current.id).toBe('k2');
  // ENCRYPTION_KEY beside the ring still decrypts what it wrote.
  expect([...ring!.byId.keys()]).toEqual(['k2', 'k1', ENCRYPTION_KEY_MASTER_ID]);
  expect(secretMasterKeyRing({ ENCRYPTION_KEY: b64() })?.current.id).toBe(ENCRYPTION_KEY_MASTER_ID);
  expect(secretMasterKeyRing({})).toBeNull();
});

it('unwraps a data key with any listed master key, and only for the tenant it was wrapped for', () => {
  const old = parseKeyRing(`k1:${b64()}`);
  const dataKey = newDataKey();
  const stored = wrapDataKey(old.current, 'tenant-a', dataKey);
  expect(stored.masterKeyId).toBe('k1');
  const rotated = parseKeyRing(`k2:${b64()},k1:${Buffer.from(old.byId.get('k1')!).toString('base64')}`);
  expect(unwrapDataKey(rotated, 'tenant-a', stored).equals(dataKey)).toBe(true);
  expect(() => unwrapDataKey(rotated, 'tenant-b', stored)).toThrow();
  expect(() => unwrapDataKey(parseKeyRing(`k2:${b64()}`), 'tenant-a', stored)).toThrow(UnknownMasterKeyError);
});

it('opens a sealed value only with the same key and additional data, and detects tampering', () => {
  const key = newDataKey();
  const sealed = seal(key, 'row-1', Buffer.from('hunter2'));
  expect(unseal(key, 'row-1', sealed).toString()).toBe('hunter2');
  expect(() => unseal(key, 'row-2', sealed)).toThrow();
  expect(() => unseal(newDataKey(), 'row-1', sealed)).toThrow();
  const flipped = Buffer.from(sealed.data, 'base64');
  flipped[0]! ^= 1;
  expect(() => unseal(key, 'row-1', { ...sealed, data: flipped.toString('base64') })).toThrow();
});

it('wraps under a key derived from the master key, never the master key itself, and still opens the older direct wrapping', () => {
  const ring = parseKeyRing(`k1:${b64()}`);
  const master = ring.current.key;
  const dataKey = newDataKey();
  const stored = wrapDataKey(ring.current, 'tenant-a', dataKey);
  expect(stored.scheme).toBe(DATA_KEY_SCHEME);
  expect(isCurrentWrapping(ring, stored)).toBe(true);
  // The master key used directly does not open it: the wrapping key is its own HKDF subkey.
  expect(() => unseal(master, 'switchboard/tenant-data-key/v2/tenant-a/k1', stored.wrapped)).toThrow();
  expect(unseal(deriveKey(master, KEY_PURPOSE.tenantDataKeyWrap), 'switchboard/tenant-data-key/v2/tenant-a/k1', stored.wrapped).equals(dataKey)).toBe(true);
  // A data key wrapped before schemes existed (master key used directly, no `scheme`) still opens, and is not current.
  const older = { masterKeyId: 'k1', wrapped: seal(master, 'switchboard/tenant-data-key/v1/tenant-a/k1', dataKey) };
  expect(unwrapDataKey(ring, 'tenant-a', older).equals(dataKey)).toBe(true);
  expect(isCurrentWrapping(ring, older)).toBe(false);
  // Marking an older wrapping as the new scheme does not make it open.
  expect(() => unwrapDataKey(ring, 'tenant-a', { ...older, scheme: DATA_KEY_SCHEME })).toThrow();
});

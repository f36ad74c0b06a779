// Envelope encryption: which master keys configuration yields, and that wrapped data keys and
// sealed values open only with the right key and the same additional data.
import { randomBytes } from 'node:crypto';
import { ENCRYPTION_KEY_MASTER_ID, newDataKey, seal, secretMasterKeyRing, unseal, UnknownMasterKeyError, unwrapDataKey, wrapDataKey } from '../../../lib/envelope';
import { parseKeyRing } from '../../../lib/key-ring';

const b64 = () => randomBytes(32).toString('base64');

it('takes SECRET_MASTER_KEYS when set, else ENCRYPTION_KEY under a fixed id, else none', () => {
  const ring = secretMasterKeyRing({ SECRET_MASTER_KEYS: `k2:${b64()},k1:${b64()}`, ENCRYPTION_KEY: b64() });
  expect(ring?.current.id).toBe('k2');
  expect([...ring!.byId.keys()]).toEqual(['k2', 'k1']);
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

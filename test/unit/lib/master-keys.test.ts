// The master key ring from configuration, the per-purpose keys derived from it, and values at rest
// naming their master key: rotation reads old values, legacy values (no key id) still open, and
// an unknown key id fails saying which.
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { deriveKey, ENCRYPTION_KEY_ID, KEY_PURPOSE, masterKeyRing, UnknownMasterKeyError } from '../../../lib/master-keys';
import { Encryptor, encryptorFromConfig } from '../../../lib/encryption';
import { payloadCodecKeyRing } from '../../../lib/payload-codec';
import { loadConfig } from '../../../lib/config';

const b64 = () => randomBytes(32).toString('base64');
const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };

describe('masterKeyRing', () => {
  it('reads ENCRYPTION_KEYS newest first; ENCRYPTION_KEY alone is a ring of one under "encryption-key"', () => {
    const [a, b] = [b64(), b64()];
    const ring = masterKeyRing({ ENCRYPTION_KEYS: `kb:${b},ka:${a}` })!;
    expect(ring.current.id).toBe('kb');
    expect([...ring.byId.keys()]).toEqual(['kb', 'ka']);
    const single = masterKeyRing({ ENCRYPTION_KEY: a })!;
    expect(single.current).toEqual({ id: ENCRYPTION_KEY_ID, key: Buffer.from(a, 'base64') });
    expect(masterKeyRing({})).toBeNull();
  });

  it('keeps ENCRYPTION_KEY beside ENCRYPTION_KEYS for decryption only', () => {
    const [old, fresh] = [b64(), b64()];
    const ring = masterKeyRing({ ENCRYPTION_KEYS: `k2:${fresh}`, ENCRYPTION_KEY: old })!;
    expect(ring.current.id).toBe('k2');
    expect(ring.byId.get(ENCRYPTION_KEY_ID)!.equals(Buffer.from(old, 'base64'))).toBe(true);
    // Listed under its id as well: the same key is fine, another is refused.
    expect(masterKeyRing({ ENCRYPTION_KEYS: `k2:${fresh},encryption-key:${old}`, ENCRYPTION_KEY: old })!.byId.size).toBe(2);
    expect(() => masterKeyRing({ ENCRYPTION_KEYS: `k2:${fresh},encryption-key:${b64()}`, ENCRYPTION_KEY: old })).toThrow(/ENCRYPTION_KEY differs from the key ENCRYPTION_KEYS lists as "encryption-key"/);
  });

  it('reads SECRET_MASTER_KEYS as the former name, and refuses both names at once', () => {
    expect(masterKeyRing({ SECRET_MASTER_KEYS: `k1:${b64()}` })!.current.id).toBe('k1');
    expect(() => masterKeyRing({ SECRET_MASTER_KEYS: `k1:${b64()}`, ENCRYPTION_KEYS: `k2:${b64()}` })).toThrow(/former name of ENCRYPTION_KEYS/);
  });

  it('stops the process at start on a bad ring, naming the variable and never the key', () => {
    const short = Buffer.alloc(16).toString('base64');
    expect(() => loadConfig({ ...minimal, ENCRYPTION_KEYS: `k1:${short}` })).toThrow(/ENCRYPTION_KEYS: key "k1" must be 32 bytes/);
    const both = () => loadConfig({ ...minimal, ENCRYPTION_KEYS: `k1:${b64()}`, SECRET_MASTER_KEYS: `k1:${b64()}` });
    expect(both).toThrow(/set only ENCRYPTION_KEYS/);
    const key = b64();
    let message = '';
    try {
      loadConfig({ ...minimal, ENCRYPTION_KEYS: `encryption-key:${key}`, ENCRYPTION_KEY: b64() });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/ENCRYPTION_KEY differs/);
    expect(message).not.toContain(key);
  });
});

describe('per-purpose keys', () => {
  it('derives a distinct key for each purpose from one master key, none equal to the master', () => {
    const master = randomBytes(32);
    const labels = Object.values(KEY_PURPOSE);
    expect(new Set(labels).size).toBe(labels.length);
    const keys = labels.map((label) => deriveKey(master, label).toString('hex'));
    expect(new Set([...keys, master.toString('hex')]).size).toBe(keys.length + 1);
    expect(deriveKey(master, KEY_PURPOSE.encryptedValue).equals(deriveKey(master, KEY_PURPOSE.encryptedValue))).toBe(true);
  });

  it('derives the codec key of ENCRYPTION_KEY exactly as before (id derived-1), and one per other master key', () => {
    const master = b64();
    const before = Buffer.from(hkdfSync('sha256', Buffer.from(master, 'base64'), Buffer.from('switchboard'), Buffer.from('temporal-payload-codec'), 32));
    const single = payloadCodecKeyRing({ ENCRYPTION_KEY: master }).ring!;
    expect(single.current.id).toBe('derived-1');
    expect(single.current.key.equals(before)).toBe(true);
    const rotated = payloadCodecKeyRing({ ENCRYPTION_KEYS: `k2:${b64()}`, ENCRYPTION_KEY: master });
    expect(rotated.source).toBe('ENCRYPTION_KEYS');
    expect(rotated.ring!.current.id).toBe('master-k2');
    expect(rotated.ring!.byId.get('derived-1')!.equals(before)).toBe(true);
  });
});

describe('Encryptor', () => {
  const [a, b] = [b64(), b64()];
  const underA = encryptorFromConfig({ ENCRYPTION_KEYS: `ka:${a}` })!;
  const rotated = encryptorFromConfig({ ENCRYPTION_KEYS: `kb:${b},ka:${a}` })!;
  const onlyB = encryptorFromConfig({ ENCRYPTION_KEYS: `kb:${b}` })!;

  it('names the master key in every value, reads old values after a rotation, and writes under the new key', () => {
    const old = underA.encrypt('t1', 'llm-credential', 'sk-1');
    expect(old).toMatchObject({ alg: 'v2', kid: 'ka' });
    expect(JSON.stringify(old)).not.toContain('sk-1');
    expect(rotated.decrypt('t1', 'llm-credential', old)).toBe('sk-1');
    expect(rotated.isCurrent(old)).toBe(false);
    const fresh = rotated.encrypt('t1', 'llm-credential', 'sk-1');
    expect(fresh.kid).toBe('kb');
    expect(rotated.isCurrent(fresh)).toBe(true);
    expect(onlyB.decrypt('t1', 'llm-credential', fresh)).toBe('sk-1');
  });

  it('fails on an unknown key id, naming it', () => {
    const old = underA.encrypt('t1', 'callback-secret', 's');
    expect(() => onlyB.decrypt('t1', 'callback-secret', old)).toThrow(UnknownMasterKeyError);
    expect(() => onlyB.decrypt('t1', 'callback-secret', old)).toThrow('master key "ka", which ENCRYPTION_KEYS does not list');
  });

  it('binds tenant, purpose and key id: a relabelled value does not open', () => {
    const value = rotated.encrypt('t1', 'callback-secret', 's');
    expect(() => rotated.decrypt('t2', 'callback-secret', value)).toThrow();
    expect(() => rotated.decrypt('t1', 'callback-payload', value)).toThrow();
    expect(() => rotated.decrypt('t1', 'callback-secret', { ...value, kid: 'ka' })).toThrow();
  });

  it('opens values written before key ids (v1: master key straight into HKDF) under any ring key, and counts them as not current', () => {
    const master = Buffer.from(a, 'base64');
    const key = Buffer.from(hkdfSync('sha256', master, Buffer.from('t1'), Buffer.from('llm-credential'), 32));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from('t1:llm-credential'));
    const data = Buffer.concat([cipher.update('sk-legacy', 'utf8'), cipher.final()]);
    const v1 = { alg: 'v1' as const, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
    expect(rotated.decrypt('t1', 'llm-credential', v1)).toBe('sk-legacy');
    expect(encryptorFromConfig({ ENCRYPTION_KEY: a })!.decrypt('t1', 'llm-credential', v1)).toBe('sk-legacy');
    expect(rotated.isCurrent(v1)).toBe(false);
    expect(() => onlyB.decrypt('t1', 'llm-credential', v1)).toThrow(/opens under none of the configured master keys/);
    expect(() => rotated.decrypt('t2', 'llm-credential', v1)).toThrow();
  });

  it('is null without a master key', () => {
    expect(encryptorFromConfig({})).toBeNull();
    expect(new Encryptor(masterKeyRing({ ENCRYPTION_KEY: a })!).currentKeyId).toBe(ENCRYPTION_KEY_ID);
  });
});

// Envelope encryption for tool secrets: each tenant has a random 32-byte data key, stored only
// wrapped (AES-256-GCM) by a master key of the SECRET_MASTER_KEYS ring; values are sealed with the
// data key under additional data naming where they belong, so a ciphertext moved elsewhere fails.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { parseKeyRing, singleKeyRing, type KeyRing, type NamedKey } from './key-ring';

/** AES-256-GCM output: 12-byte IV, 16-byte tag, ciphertext; all base64. */
export interface Sealed {
  iv: string;
  tag: string;
  data: string;
}

/** The id ENCRYPTION_KEY goes by when it is the master key (SECRET_MASTER_KEYS unset). */
export const ENCRYPTION_KEY_MASTER_ID = 'encryption-key';

/**
 * The master keys that wrap tenant data keys: SECRET_MASTER_KEYS when set, else ENCRYPTION_KEY
 * alone under the id `encryption-key`, else none (tool secrets then answer 503).
 */
export function secretMasterKeyRing(config: { SECRET_MASTER_KEYS?: string | undefined; ENCRYPTION_KEY?: string | undefined }): KeyRing | null {
  if (config.SECRET_MASTER_KEYS) return parseKeyRing(config.SECRET_MASTER_KEYS);
  if (config.ENCRYPTION_KEY) return singleKeyRing(ENCRYPTION_KEY_MASTER_ID, config.ENCRYPTION_KEY);
  return null;
}

export function seal(key: Buffer, aad: string, plaintext: Buffer): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

/** @throws when the key or the additional data differ from the sealing ones, or the value was altered. */
export function unseal(key: Buffer, aad: string, sealed: Sealed): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
}

// A wrapped data key names its tenant and master key, so it cannot be swapped to another tenant.
const wrapAad = (tenantId: string, masterKeyId: string) => `switchboard/tenant-data-key/v1/${tenantId}/${masterKeyId}`;

export function newDataKey(): Buffer {
  return randomBytes(32);
}

export function wrapDataKey(master: NamedKey, tenantId: string, dataKey: Buffer): { masterKeyId: string; wrapped: Sealed } {
  return { masterKeyId: master.id, wrapped: seal(master.key, wrapAad(tenantId, master.id), dataKey) };
}

export class UnknownMasterKeyError extends Error {
  constructor(readonly masterKeyId: string) {
    super(`The data key was wrapped with master key "${masterKeyId}", which SECRET_MASTER_KEYS no longer lists`);
    this.name = 'UnknownMasterKeyError';
  }
}

/** @throws UnknownMasterKeyError when the ring no longer holds the wrapping key. */
export function unwrapDataKey(ring: KeyRing, tenantId: string, stored: { masterKeyId: string; wrapped: Sealed }): Buffer {
  const master = ring.byId.get(stored.masterKeyId);
  if (!master) throw new UnknownMasterKeyError(stored.masterKeyId);
  return unseal(master, wrapAad(tenantId, stored.masterKeyId), stored.wrapped);
}

// Envelope encryption for tenant secrets (tool secrets, HTTP-async signing secrets): each tenant has
// a random 32-byte data key, stored only wrapped (AES-256-GCM) by a key derived from a master key
// of the ring (lib/master-keys.ts); values are sealed with the data key under additional data
// naming where they belong, so a ciphertext moved elsewhere fails.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { type KeyRing, type NamedKey } from './key-ring';
import { deriveKey, ENCRYPTION_KEY_ID, KEY_PURPOSE, masterKey, masterKeyRing, UnknownMasterKeyError, type MasterKeySettings } from './master-keys';

export { UnknownMasterKeyError };

/** AES-256-GCM output: 12-byte IV, 16-byte tag, ciphertext; all base64. */
export interface Sealed {
  iv: string;
  tag: string;
  data: string;
}

/** The id ENCRYPTION_KEY goes by in the master key ring. */
export const ENCRYPTION_KEY_MASTER_ID = ENCRYPTION_KEY_ID;

/**
 * The master keys that wrap tenant data keys: the platform's one master key ring
 * (lib/master-keys.ts), or null when none is configured (tenant secrets then answer 503).
 */
export function secretMasterKeyRing(config: MasterKeySettings): KeyRing | null {
  return masterKeyRing(config);
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
const wrapAad = (tenantId: string, masterKeyId: string, scheme: number) => `switchboard/tenant-data-key/v${scheme}/${tenantId}/${masterKeyId}`;

/** How data keys are wrapped now: under a key derived from the master key for this use alone. */
export const DATA_KEY_SCHEME = 2;

/**
 * A stored wrapping. `scheme` 2: the wrapping key is HKDF(master, info `switchboard/tenant-data-key-wrap/v2`).
 * No `scheme` (written before it existed): the master key itself wrapped, read and re-wrapped only.
 */
export interface WrappedDataKey {
  masterKeyId: string;
  scheme?: number | null;
  wrapped: Sealed;
}

export function newDataKey(): Buffer {
  return randomBytes(32);
}

const wrappingKey = (master: Buffer) => deriveKey(master, KEY_PURPOSE.tenantDataKeyWrap);

export function wrapDataKey(master: NamedKey, tenantId: string, dataKey: Buffer): { masterKeyId: string; scheme: number; wrapped: Sealed } {
  return { masterKeyId: master.id, scheme: DATA_KEY_SCHEME, wrapped: seal(wrappingKey(master.key), wrapAad(tenantId, master.id, DATA_KEY_SCHEME), dataKey) };
}

/** Whether a stored wrapping is under the ring's current master key, in the current scheme. */
export function isCurrentWrapping(ring: KeyRing, stored: Pick<WrappedDataKey, 'masterKeyId' | 'scheme'>): boolean {
  return stored.masterKeyId === ring.current.id && stored.scheme === DATA_KEY_SCHEME;
}

/** @throws UnknownMasterKeyError when the ring no longer holds the wrapping key. */
export function unwrapDataKey(ring: KeyRing, tenantId: string, stored: WrappedDataKey): Buffer {
  const master = masterKey(ring, stored.masterKeyId);
  if (stored.scheme === DATA_KEY_SCHEME) return unseal(wrappingKey(master), wrapAad(tenantId, stored.masterKeyId, DATA_KEY_SCHEME), stored.wrapped);
  return unseal(master, wrapAad(tenantId, stored.masterKeyId, 1), stored.wrapped);
}

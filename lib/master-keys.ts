// The platform's one master key ring (ENCRYPTION_KEYS, or ENCRYPTION_KEY alone) and the keys
// derived from it: each scheme (wrapping tenant data keys, per-tenant values at rest, the
// Temporal payload codec) gets its own subkey by HKDF-SHA256 under its own label, so no key
// serves two schemes and a subkey that leaks opens nothing of another scheme.
import { hkdfSync } from 'node:crypto';
import { parseKeyRing, type KeyRing } from './key-ring';

/** The id ENCRYPTION_KEY goes by in the ring (alone, or beside ENCRYPTION_KEYS for decryption only). */
export const ENCRYPTION_KEY_ID = 'encryption-key';

/**
 * The HKDF `info` label of each scheme keyed by the master ring. Never reuse one for another
 * scheme, and never change one: what was written under it would no longer open.
 */
export const KEY_PURPOSE = {
  /** Wrapping each tenant's random data key (lib/secret-envelope.ts, db/tenant-data-key.ts). */
  tenantDataKeyWrap: 'switchboard/tenant-data-key-wrap/v2',
  /** Per-tenant values at rest (lib/encryption.ts): salt = tenant id, info = this + '/' + the value's purpose. */
  encryptedValue: 'switchboard/encrypted-value/v2',
  /** The Temporal payload codec key derived when PAYLOAD_CODEC_KEYS is unset (salt `switchboard`; the label its first release used). */
  payloadCodec: 'temporal-payload-codec',
  /** The HMAC key of operator sessions of the codec endpoint; derived from PLATFORM_ADMIN_TOKEN, not from the ring. */
  codecOperatorSession: 'switchboard/codec-operator-session/v1',
  /** The outbound calls' destination blind index key, when OUTBOUND_DESTINATION_INDEX_KEY is unset (outside production only). */
  outboundDestinationIndex: 'switchboard/outbound-destination-index/v1',
  /** The proof a call's status callback URL carries that the call is its connection's (core/telephony/call-refs.ts). */
  outboundCallRef: 'switchboard/outbound-call-ref/v1',
  /** The HS256 key of sandbox tokens (core/memory-stores/sandbox-token.ts), when SANDBOX_JWT_SECRET is unset (outside production only). */
  sandboxToken: 'switchboard/sandbox-token/v1',
  /** The HS256 key of SDK session tokens (core/sdk/session-token.ts). */
  sdkSessionToken: 'switchboard/sdk-session-token/v1',
  /** Per public key, the secret a customer's backend signs user assertions with (core/sdk/user-assertion.ts). */
  sdkIdentitySecret: 'switchboard/sdk-identity-secret/v1',
} as const;

/** HKDF-SHA256 of a root key for one purpose: 32 bytes. */
export function deriveKey(root: Buffer | string, info: string, salt: Buffer | string = ''): Buffer {
  return Buffer.from(hkdfSync('sha256', root, salt, info, 32));
}

/** A ciphertext names a master key the ring does not list (dropped too early, or never configured here). */
export class UnknownMasterKeyError extends Error {
  constructor(readonly masterKeyId: string) {
    super(`encrypted under master key "${masterKeyId}", which ENCRYPTION_KEYS does not list`);
    this.name = 'UnknownMasterKeyError';
  }
}

/** The master key `id`, or UnknownMasterKeyError. */
export function masterKey(ring: KeyRing, id: string): Buffer {
  const key = ring.byId.get(id);
  if (!key) throw new UnknownMasterKeyError(id);
  return key;
}

export interface MasterKeySettings {
  ENCRYPTION_KEYS?: string | undefined;
  /** The former name of ENCRYPTION_KEYS, still read when ENCRYPTION_KEYS is unset. */
  SECRET_MASTER_KEYS?: string | undefined;
  ENCRYPTION_KEY?: string | undefined;
}

/**
 * The master key ring: ENCRYPTION_KEYS (`id:base64,id:base64`, newest first: the first encrypts,
 * every one decrypts what names it). ENCRYPTION_KEY alone is a ring of one key under the id
 * `encryption-key`; beside ENCRYPTION_KEYS it is kept under that id for decryption only (what the
 * deployment wrote before the move). Null when no key is configured.
 * @throws Error naming the variable and the entry at fault (never key material).
 */
export function masterKeyRing(settings: MasterKeySettings): KeyRing | null {
  if (settings.ENCRYPTION_KEYS && settings.SECRET_MASTER_KEYS) {
    throw new Error('SECRET_MASTER_KEYS is the former name of ENCRYPTION_KEYS: set only ENCRYPTION_KEYS');
  }
  const name = settings.ENCRYPTION_KEYS ? 'ENCRYPTION_KEYS' : 'SECRET_MASTER_KEYS';
  const listed = settings.ENCRYPTION_KEYS ?? settings.SECRET_MASTER_KEYS;
  let ring: KeyRing | null = null;
  if (listed) {
    try {
      ring = parseKeyRing(listed);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`);
    }
  }
  if (!settings.ENCRYPTION_KEY) return ring;
  const single = Buffer.from(settings.ENCRYPTION_KEY, 'base64');
  if (single.length !== 32) throw new Error('ENCRYPTION_KEY: must be 32 bytes, base64-encoded (openssl rand -base64 32)');
  if (!ring) return { current: { id: ENCRYPTION_KEY_ID, key: single }, byId: new Map([[ENCRYPTION_KEY_ID, single]]) };
  const listedUnderId = ring.byId.get(ENCRYPTION_KEY_ID);
  if (listedUnderId && !listedUnderId.equals(single)) {
    throw new Error(`ENCRYPTION_KEY differs from the key ${name} lists as "${ENCRYPTION_KEY_ID}": unset ENCRYPTION_KEY, or list it under that id`);
  }
  return { current: ring.current, byId: new Map([...ring.byId, [ENCRYPTION_KEY_ID, single]]) };
}

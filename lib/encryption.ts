// Per-tenant values at rest (LLM credentials, callback secrets and payloads, app-run callback
// tokens): AES-256-GCM under a key per tenant and purpose, derived with HKDF-SHA256 from a master
// key of the ring (lib/master-keys.ts). Each value names the master key (`kid`) that sealed it, so
// a rotation reads old values with the old key until they are re-encrypted (`npm run admin -- reencrypt`).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { type KeyRing } from './key-ring';
import { deriveKey, ENCRYPTION_KEY_ID, KEY_PURPOSE, masterKey, masterKeyRing, type MasterKeySettings } from './master-keys';

/**
 * `v2`: AES-256-GCM, 12-byte IV, 16-byte tag, key HKDF(master `kid`, salt = tenant id,
 * info = `switchboard/encrypted-value/v2/<purpose>`), additional data naming version, kid, tenant and purpose.
 * `v1` (written before key ids): no `kid`, key HKDF(master, salt = tenant id, info = purpose); read only.
 */
export interface EncryptedValue {
  alg: 'v1' | 'v2';
  kid?: string;
  iv: string;
  tag: string;
  data: string;
}

export const CURRENT_ALG = 'v2';

export class Encryptor {
  constructor(private readonly ring: KeyRing) {}

  /** The id of the master key new values are sealed under. */
  get currentKeyId(): string {
    return this.ring.current.id;
  }

  private key(master: Buffer, tenantId: string, purpose: string): Buffer {
    return deriveKey(master, `${KEY_PURPOSE.encryptedValue}/${purpose}`, tenantId);
  }

  /** `purpose` separates uses (e.g. 'llm-credential', 'callback-secret') as additional key context. */
  encrypt(tenantId: string, purpose: string, plaintext: string): EncryptedValue {
    const { id, key: master } = this.ring.current;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key(master, tenantId, purpose), iv);
    cipher.setAAD(aad(id, tenantId, purpose));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { alg: CURRENT_ALG, kid: id, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  /** Whether a stored value is sealed under the current master key in the current format. */
  isCurrent(value: EncryptedValue): boolean {
    return value.alg === CURRENT_ALG && value.kid === this.ring.current.id;
  }

  /**
   * @throws UnknownMasterKeyError when the value names a master key the ring does not list; an
   *   Error when it was not encrypted for this tenant and purpose, or was tampered with.
   */
  decrypt(tenantId: string, purpose: string, value: EncryptedValue): string {
    if (value.alg === CURRENT_ALG) {
      const kid = value.kid ?? '';
      return open(this.key(masterKey(this.ring, kid), tenantId, purpose), aad(kid, tenantId, purpose), value);
    }
    if (value.alg !== 'v1') throw new Error(`unknown encrypted value format "${String(value.alg)}"`);
    // v1 names no key: the one configured then was ENCRYPTION_KEY, so it is tried first, then the
    // others (GCM authenticates, so only the sealing key opens it).
    const ids = [...this.ring.byId.keys()].sort((a, b) => Number(b === ENCRYPTION_KEY_ID) - Number(a === ENCRYPTION_KEY_ID));
    for (const id of ids) {
      const key = deriveKey(this.ring.byId.get(id)!, purpose, tenantId);
      try {
        return open(key, Buffer.from(`${tenantId}:${purpose}`, 'utf8'), value);
      } catch {
        // Not this key: try the next.
      }
    }
    throw new Error('the value (written before key ids) opens under none of the configured master keys');
  }
}

/** The encryptor of this configuration's master key ring, or null when no master key is configured. */
export function encryptorFromConfig(config: MasterKeySettings): Encryptor | null {
  const ring = masterKeyRing(config);
  return ring ? new Encryptor(ring) : null;
}

const aad = (kid: string, tenantId: string, purpose: string) => Buffer.from(JSON.stringify(['switchboard/encrypted-value/v2', kid, tenantId, purpose]), 'utf8');

function open(key: Buffer, additional: Buffer, value: EncryptedValue): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(value.iv, 'base64'));
  decipher.setAAD(additional);
  decipher.setAuthTag(Buffer.from(value.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(value.data, 'base64')), decipher.final()]).toString('utf8');
}

// Secrets at rest: AES-256-GCM with a key per tenant, derived from the master ENCRYPTION_KEY with
// HKDF-SHA256, so one tenant's ciphertext cannot be opened under another tenant's key.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export interface EncryptedValue {
  /** `v1`: AES-256-GCM, 12-byte IV, 16-byte tag, HKDF(master, salt=tenantId, info=purpose). */
  alg: 'v1';
  iv: string;
  tag: string;
  data: string;
}

export class Encryptor {
  private readonly master: Buffer;

  constructor(masterKeyBase64: string) {
    this.master = Buffer.from(masterKeyBase64, 'base64');
    if (this.master.length !== 32) throw new Error('ENCRYPTION_KEY must be 32 bytes, base64-encoded');
  }

  private keyFor(tenantId: string, purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.master, Buffer.from(tenantId, 'utf8'), Buffer.from(purpose, 'utf8'), 32));
  }

  /** `purpose` separates uses (e.g. 'tool-secret', 'llm-credential') as additional key context. */
  encrypt(tenantId: string, purpose: string, plaintext: string): EncryptedValue {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keyFor(tenantId, purpose), iv);
    cipher.setAAD(Buffer.from(`${tenantId}:${purpose}`, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { alg: 'v1', iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  /** @throws when the value was not encrypted for this tenant and purpose, or was tampered with. */
  decrypt(tenantId: string, purpose: string, value: EncryptedValue): string {
    const decipher = createDecipheriv('aes-256-gcm', this.keyFor(tenantId, purpose), Buffer.from(value.iv, 'base64'));
    decipher.setAAD(Buffer.from(`${tenantId}:${purpose}`, 'utf8'));
    decipher.setAuthTag(Buffer.from(value.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(value.data, 'base64')), decipher.final()]).toString('utf8');
  }
}

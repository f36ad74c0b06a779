// Encrypts every Temporal payload (workflow inputs, activity arguments and results, signals,
// updates, memos) with AES-256-GCM before it leaves the process, so workflow history, which ops
// teams read in the Temporal Web UI, never holds a secret, a callback secret or an API key in clear.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { type Config, ConfigError } from './config';
import { type Logger } from './logger';
import { parseKeyRing, type KeyRing } from './key-ring';
import { deriveKey, ENCRYPTION_KEY_ID, KEY_PURPOSE, masterKeyRing, type MasterKeySettings } from './master-keys';

/** `encoding` of an encrypted payload; the original payload (with its metadata) is the plaintext. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key of the ring that encrypted the payload. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** Key id of the codec key derived from ENCRYPTION_KEY (the master key `encryption-key`). */
export const DERIVED_KEY_ID = 'derived-1';

/** The id of the codec key derived from master key `masterKeyId`: `derived-1` for ENCRYPTION_KEY, as it always was. */
export function derivedCodecKeyId(masterKeyId: string): string {
  return masterKeyId === ENCRYPTION_KEY_ID ? DERIVED_KEY_ID : `master-${masterKeyId}`;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : '');

/** A payload that cannot be decoded: tampered with, truncated, or under a key this process lacks. */
export class PayloadCodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadCodecError';
  }
}

export function isEncryptedPayload(payload: Payload): boolean {
  return text(payload.metadata?.encoding) === ENCRYPTED_ENCODING;
}

/**
 * AES-256-GCM over the serialized Payload proto: the first key of the ring encrypts, any key
 * decrypts what names it. Payloads not marked encrypted pass through decode unchanged, so
 * histories written before the codec was turned on still read and replay.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(private readonly ring: KeyRing) {}

  get currentKeyId(): string {
    return this.ring.current.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (isEncryptedPayload(payload) ? this.decrypt(payload) : payload));
  }

  private encrypt(payload: Payload): Payload {
    const { id, key } = this.ring.current;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    // The key id is authenticated too: a payload relabelled with another id fails to open.
    cipher.setAAD(utf8(id));
    const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
    const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return { metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(id) }, data: sealed };
  }

  private decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    if (!id) throw new PayloadCodecError(`Encrypted payload has no ${KEY_ID_METADATA} metadata`);
    const key = this.ring.byId.get(id);
    if (!key) {
      // `derived-1` and `master-<id>` keys come from the master keys (ENCRYPTION_KEYS); the others are PAYLOAD_CODEC_KEYS.
      throw new PayloadCodecError(`Payload was encrypted with key "${id}", which is not in PAYLOAD_CODEC_KEYS (keys: ${[...this.ring.byId.keys()].join(', ')})`);
    }
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new PayloadCodecError('Encrypted payload is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(utf8(id));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadCodecError(`Encrypted payload failed authentication under key "${id}" (altered, or written with another key of that id)`);
    }
    return temporal.api.common.v1.Payload.decode(plaintext);
  }
}

/** Where the codec key came from, for the start-up log line. */
export type CodecKeySource = 'PAYLOAD_CODEC_KEYS' | 'ENCRYPTION_KEYS' | 'none';

type CodecSettings = MasterKeySettings & { PAYLOAD_CODEC_KEYS?: string | undefined };

/**
 * The codec key ring configuration gives: PAYLOAD_CODEC_KEYS, else a key derived from each master
 * key (the current one encrypts). Keys derived from the master keys always decrypt what they wrote,
 * so moving to PAYLOAD_CODEC_KEYS, or rotating the master key, keeps histories readable as long as
 * the master key stays listed.
 */
export function payloadCodecKeyRing(config: CodecSettings): { ring: KeyRing | null; source: CodecKeySource } {
  const masters = masterKeyRing(config);
  // Its own key, never the master itself: a leaked codec key must not open secrets at rest.
  const derive = (master: Buffer) => deriveKey(master, KEY_PURPOSE.payloadCodec, 'switchboard');
  const derived = new Map([...(masters?.byId ?? new Map<string, Buffer>())].map(([id, key]) => [derivedCodecKeyId(id), derive(key)] as const));
  if (config.PAYLOAD_CODEC_KEYS) {
    const ring = parseKeyRing(config.PAYLOAD_CODEC_KEYS);
    // Listed keys win over a derived key of the same id.
    ring.byId = new Map([...derived, ...ring.byId]);
    return { ring, source: 'PAYLOAD_CODEC_KEYS' };
  }
  if (!masters) return { ring: null, source: 'none' };
  const currentId = derivedCodecKeyId(masters.current.id);
  return { ring: { current: { id: currentId, key: derived.get(currentId)! }, byId: derived }, source: 'ENCRYPTION_KEYS' };
}

/** The codec of this configuration, or null when no key is configured (payloads stay in clear). */
export function payloadCodecFromConfig(config: CodecSettings): AesGcmPayloadCodec | null {
  const { ring } = payloadCodecKeyRing(config);
  return ring ? new AesGcmPayloadCodec(ring) : null;
}

/** The module whose `failureConverter` every client, worker and workflow bundle loads (lib/failure-converter.ts). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * The data converter every Temporal client and worker of the platform uses. Failures' messages and
 * stack traces go into an encoded payload (lib/failure-converter.ts), so the codec hides them too.
 */
export function switchboardDataConverter(codec: PayloadCodec | null): DataConverter {
  return { failureConverterPath: FAILURE_CONVERTER_PATH, ...(codec ? { payloadCodecs: [codec] } : {}) };
}

/** The warning logged at start when payloads stay in clear (never in production, which refuses to start). */
export const CLEAR_PAYLOADS_WARNING =
  'No PAYLOAD_CODEC_KEYS, ENCRYPTION_KEYS or ENCRYPTION_KEY: Temporal payloads (messages, tool arguments, results) are stored in clear in workflow history';

/**
 * The codec a process (API, worker) starts with. Without a key it refuses to start in production
 * (ConfigError) and logs a warning elsewhere, so clear payloads are never a silent default.
 */
export function payloadCodecForProcess(config: CodecSettings & Pick<Config, 'NODE_ENV'>, logger: Logger): AesGcmPayloadCodec | null {
  const { ring, source } = payloadCodecKeyRing(config);
  if (!ring) {
    if (config.NODE_ENV === 'production') {
      throw new ConfigError(['PAYLOAD_CODEC_KEYS (or ENCRYPTION_KEYS / ENCRYPTION_KEY, from which a codec key is derived) must be set when NODE_ENV=production: Temporal payloads are encrypted with it']);
    }
    logger.warn(CLEAR_PAYLOADS_WARNING);
    return null;
  }
  logger.info({ keyId: ring.current.id, keySource: source }, 'Temporal payloads are encrypted');
  return new AesGcmPayloadCodec(ring);
}

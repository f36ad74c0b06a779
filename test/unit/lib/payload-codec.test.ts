// The Temporal payload codec: AES-256-GCM under a key ring, the key id in the metadata, clear
// payloads passed through, and a clear error for an altered payload or a key no longer configured.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { parseKeyRing } from '../../../lib/key-ring';
import {
  AesGcmPayloadCodec,
  DERIVED_KEY_ID,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  payloadCodecForProcess,
  payloadCodecFromConfig,
  PayloadCodecError,
} from '../../../lib/payload-codec';
import { ConfigError, loadConfig } from '../../../lib/config';
import { createLogger } from '../../../lib/logger';

const key = () => randomBytes(32).toString('base64');
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const MARKER = 'marker-4f1c9e-secret';

const [k1, k2] = [key(), key()];
const codec = new AesGcmPayloadCodec(parseKeyRing(`k1:${k1}`));
const plain = () => defaultPayloadConverter.toPayload({ secret: MARKER })!;

it('encrypts the whole payload under the first key, names the key, and decodes it back', async () => {
  const [encoded] = await codec.encode([plain()]);
  expect(text(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
  expect(text(encoded!.metadata![KEY_ID_METADATA])).toBe('k1');
  expect(Object.keys(encoded!.metadata!).sort()).toEqual(['encoding', KEY_ID_METADATA].sort());
  expect(Buffer.from(encoded!.data!).includes(MARKER)).toBe(false);
  const [decoded] = await codec.decode([encoded!]);
  expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ secret: MARKER });
  expect(text(decoded!.metadata!.encoding)).toBe('json/plain');
});

it('uses a fresh IV: the same value encrypts differently every time', async () => {
  const [a, b] = await codec.encode([plain(), plain()]);
  expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
});

it('passes payloads that are not marked encrypted through decode unchanged (histories from before the codec)', async () => {
  const clear = plain();
  const [decoded] = await codec.decode([clear]);
  expect(decoded).toBe(clear);
});

it('refuses an altered payload with a clear error', async () => {
  const [encoded] = await codec.encode([plain()]);
  const data = Buffer.from(encoded!.data!);
  data[20] = data[20]! ^ 1;
  await expect(codec.decode([{ ...encoded!, data }])).rejects.toThrow(PayloadCodecError);
  await expect(codec.decode([{ ...encoded!, data }])).rejects.toThrow(/failed authentication under key "k1"/);
  await expect(codec.decode([{ ...encoded!, data: data.subarray(0, 10) }])).rejects.toThrow(/truncated/);
});

it('refuses a payload relabelled with another key id of the ring (the id is authenticated)', async () => {
  const ring = new AesGcmPayloadCodec(parseKeyRing(`k1:${k1},k2:${k2}`));
  const [encoded] = await ring.encode([plain()]);
  const relabelled: Payload = { ...encoded!, metadata: { ...encoded!.metadata, [KEY_ID_METADATA]: Buffer.from('k2') } };
  await expect(ring.decode([relabelled])).rejects.toThrow(/failed authentication under key "k2"/);
});

it('names an unknown key id, and the keys it has, without showing any key', async () => {
  const other = new AesGcmPayloadCodec(parseKeyRing(`k9:${key()}`));
  const [encoded] = await other.encode([plain()]);
  const error = await codec.decode([encoded!]).catch((e: unknown) => e as Error);
  expect(error).toBeInstanceOf(PayloadCodecError);
  expect((error as Error).message).toMatch(/encrypted with key "k9", which is not in PAYLOAD_CODEC_KEYS \(keys: k1\)/);
  expect((error as Error).message).not.toContain(k1);
  const noId: Payload = { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING) }, data: encoded!.data };
  await expect(codec.decode([noId])).rejects.toThrow(/no encryption-key-id metadata/);
});

it('decodes what an older key wrote after a new key is put first, and encrypts with the new one', async () => {
  const [old] = await codec.encode([plain()]);
  const rotated = new AesGcmPayloadCodec(parseKeyRing(`k2:${k2},k1:${k1}`));
  expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toEqual({ secret: MARKER });
  const [fresh] = await rotated.encode([plain()]);
  expect(text(fresh!.metadata![KEY_ID_METADATA])).toBe('k2');
});

describe('keys from configuration', () => {
  it('uses PAYLOAD_CODEC_KEYS when set, else a key derived from ENCRYPTION_KEY, else none', async () => {
    const master = key();
    expect(payloadCodecFromConfig({ PAYLOAD_CODEC_KEYS: `k1:${k1}`, ENCRYPTION_KEY: master })?.currentKeyId).toBe('k1');
    const derived = payloadCodecFromConfig({ ENCRYPTION_KEY: master })!;
    expect(derived.currentKeyId).toBe(DERIVED_KEY_ID);
    // Derivation is stable (another process reads it) and is not the master key itself.
    const [encoded] = await derived.encode([plain()]);
    await expect(payloadCodecFromConfig({ ENCRYPTION_KEY: master })!.decode([encoded!])).resolves.toHaveLength(1);
    await expect(new AesGcmPayloadCodec(parseKeyRing(`${DERIVED_KEY_ID}:${master}`)).decode([encoded!])).rejects.toThrow(PayloadCodecError);
    expect(payloadCodecFromConfig({})).toBeNull();
  });

  it('still decodes what the derived key wrote once PAYLOAD_CODEC_KEYS is set beside ENCRYPTION_KEY', async () => {
    const master = key();
    const [before] = await payloadCodecFromConfig({ ENCRYPTION_KEY: master })!.encode([plain()]);
    const listed = payloadCodecFromConfig({ PAYLOAD_CODEC_KEYS: `k1:${k1}`, ENCRYPTION_KEY: master })!;
    expect(defaultPayloadConverter.fromPayload((await listed.decode([before!]))[0]!)).toEqual({ secret: MARKER });
    expect(listed.currentKeyId).toBe('k1');
    await expect(payloadCodecFromConfig({ PAYLOAD_CODEC_KEYS: `k1:${k1}` })!.decode([before!])).rejects.toThrow(/key "derived-1"/);
  });

  it('refuses to start in production without a key, and warns elsewhere', () => {
    const logger = createLogger({ level: 'silent' });
    const warn = jest.spyOn(logger, 'warn');
    expect(() => payloadCodecForProcess({ NODE_ENV: 'production' }, logger)).toThrow(ConfigError);
    expect(() => payloadCodecForProcess({ NODE_ENV: 'production' }, logger)).toThrow(/PAYLOAD_CODEC_KEYS .* must be set when NODE_ENV=production/);
    expect(payloadCodecForProcess({ NODE_ENV: 'development' }, logger)).toBeNull();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('stored in clear'));
    expect(payloadCodecForProcess({ NODE_ENV: 'production', ENCRYPTION_KEY: key() }, logger)).not.toBeNull();
  });

  it('validates PAYLOAD_CODEC_KEYS and TEMPORAL_UI_ORIGIN at start, naming the variable and never a key', () => {
    const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };
    const short = Buffer.alloc(16, 1).toString('base64');
    const error = (() => {
      try {
        loadConfig({ ...minimal, PAYLOAD_CODEC_KEYS: `k1:${k1},k2:${short}` });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.message).toMatch(/PAYLOAD_CODEC_KEYS: key "k2" must be 32 bytes/);
    expect(error!.message).not.toContain(k1);
    expect(loadConfig({ ...minimal, TEMPORAL_UI_ORIGIN: 'http://localhost:8233/' }).TEMPORAL_UI_ORIGIN).toBe('http://localhost:8233');
    expect(() => loadConfig({ ...minimal, TEMPORAL_UI_ORIGIN: 'https://ui.example.com/namespaces' })).toThrow(/TEMPORAL_UI_ORIGIN: must be an origin/);
    expect(loadConfig(minimal).TEMPORAL_UI_ORIGIN).toBeUndefined();
  });
});

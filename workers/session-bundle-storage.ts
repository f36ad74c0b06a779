// Keeps session bundles out of workflow history. The worker's payload codec sees every payload it
// writes: the result of `loadSessionBundle` (JSON that starts with its `bundleHash`) is written as
// a reference holding the hash. When a workflow task needs it back (a replay, another worker), the
// bundle comes from this worker's cache or is rebuilt from MongoDB by hash. Every other payload
// passes unchanged. (A codec rather than the SDK's experimental external storage, whose reference
// encoding fails when npm installs two copies of protobufjs, as it does here.)
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { type SessionBundleStore } from '../activities/persistence/session-bundles';

const PREFIX = Buffer.from('{"bundleHash":"sha256:');
const HASH_PATTERN = /^\{"bundleHash":"(sha256:[0-9a-f]{64})"/;

/** The hash a bundle payload starts with, or null for any other payload. */
export function bundleHashOfPayload(payload: Payload): string | null {
  const data = payload.data;
  if (!data || data.length < PREFIX.length + 65) return null;
  if (Buffer.compare(Buffer.from(data.buffer, data.byteOffset, PREFIX.length), PREFIX) !== 0) return null;
  const match = HASH_PATTERN.exec(Buffer.from(data.buffer, data.byteOffset, PREFIX.length + 65).toString('utf8'));
  return match?.[1] ?? null;
}

/** Encoding of a bundle reference in history; its data is the bundle's hash. */
export const SESSION_BUNDLE_ENCODING = 'binary/switchboard-session-bundle';

function bundleReference(bundleHash: string): Payload {
  return { metadata: { encoding: Buffer.from(SESSION_BUNDLE_ENCODING) }, data: Buffer.from(bundleHash) };
}

/** The bundle's hash when `payload` is a bundle reference, else null. */
function referencedHash(payload: HistoryPayload): string | null {
  const encoding = payload.metadata?.encoding;
  if (!encoding || Buffer.from(encoding).toString('utf8') !== SESSION_BUNDLE_ENCODING || !payload.data) return null;
  return Buffer.from(payload.data).toString('utf8');
}

/** The bundle payload for a hash: this worker's copy, else rebuilt from MongoDB. */
async function bundlePayload(store: SessionBundleStore, bundleHash: string): Promise<Payload> {
  const held = store.payloads.get(bundleHash) as Payload | undefined;
  if (held) return held;
  const bundle = await store.loadByHash(bundleHash);
  if (!bundle) throw new Error(`Session bundle ${bundleHash} is not recorded, or a version it pins was deleted`);
  const payload = defaultPayloadConverter.toPayload(bundle);
  store.payloads.set(bundleHash, payload);
  return payload;
}

/**
 * The worker's payload codec: a bundle (JSON that starts with its hash) leaves as a reference
 * holding the hash and comes back as the bundle; every other payload passes unchanged.
 */
export function sessionBundleCodec(store: SessionBundleStore): PayloadCodec {
  return {
    async encode(payloads) {
      return payloads.map((payload) => {
        const bundleHash = bundleHashOfPayload(payload);
        if (!bundleHash) return payload;
        store.payloads.set(bundleHash, payload);
        return bundleReference(bundleHash);
      });
    },
    async decode(payloads) {
      return Promise.all(payloads.map((payload) => {
        const bundleHash = referencedHash(payload);
        return bundleHash ? bundlePayload(store, bundleHash) : payload;
      }));
    },
  };
}

interface HistoryPayload {
  metadata?: Record<string, Uint8Array> | null;
  data?: Uint8Array | null;
}

/**
 * A copy of a fetched history with every bundle reference replaced by the bundle itself, so a
 * replay or a recorded fixture needs no MongoDB. Changes the history in place and returns it.
 */
export async function inlineSessionBundles<H extends object>(history: H, store: SessionBundleStore): Promise<H> {
  const visit = async (value: unknown): Promise<void> => {
    if (!value || typeof value !== 'object' || value instanceof Uint8Array) return;
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      if (child && typeof child === 'object' && 'metadata' in child && 'data' in child) {
        const bundleHash = referencedHash(child as HistoryPayload);
        if (bundleHash) {
          const payload = await bundlePayload(store, bundleHash);
          (value as Record<string, unknown>)[key] = { metadata: payload.metadata, data: payload.data };
          continue;
        }
      }
      await visit(child);
    }
  };
  await visit(history);
  return history;
}

// Keeps session bundles out of workflow history. The worker's payload codec sees every payload it
// writes: a bundle's payload (the encoding the payload converter gives only to objects the bundle
// store marked, lib/payload-converter.ts) is written as a reference holding the bundle's hash and
// owner. When a workflow task needs it back (a replay, another worker), the bundle comes from this
// worker's cache or is rebuilt from MongoDB, within the owner's project. Every other payload passes
// unchanged: what a payload's JSON says never makes it a bundle. (A codec rather than the SDK's
// experimental external storage, whose reference encoding fails when npm installs two copies of
// protobufjs, as it does here.)
//
// References written before bundles had their own encoding (LEGACY_SESSION_BUNDLE_ENCODING: the
// hash alone, recognised then by the JSON's prefix) are still read, by hash, so that those
// histories replay; nothing writes them any more.
import { type Payload, type PayloadCodec } from '@temporalio/common';
import { type SessionBundleStore } from '../activities/persistence/session-bundles';
import {
  BUNDLE_HASH_METADATA,
  BUNDLE_PROJECT_METADATA,
  BUNDLE_TENANT_METADATA,
  payloadConverter,
  SESSION_BUNDLE_PAYLOAD_ENCODING,
  type SessionBundleOwner,
} from '../lib/payload-converter';

/** Encoding of a bundle reference in history; its data is JSON `{ bundleHash, tenantId, projectId }`. */
export const SESSION_BUNDLE_REF_ENCODING = 'json/switchboard-session-bundle-ref';
/** Encoding of the references written before: the data is the bare hash, and names no owner. */
export const LEGACY_SESSION_BUNDLE_ENCODING = 'binary/switchboard-session-bundle';

const HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;

interface HistoryPayload {
  metadata?: Record<string, Uint8Array> | null;
  data?: Uint8Array | null;
}

const text = (bytes: Uint8Array | null | undefined): string => (bytes ? Buffer.from(bytes).toString('utf8') : '');

interface BundleReference {
  bundleHash: string;
  /** Null for a reference written before references named their owner. */
  owner: SessionBundleOwner | null;
}

/** The bundle's hash and owner when `payload` is a bundle's own payload, else null. */
function bundleOfPayload(payload: Payload): { bundleHash: string; owner: SessionBundleOwner } | null {
  const metadata = payload.metadata;
  if (!metadata || text(metadata.encoding) !== SESSION_BUNDLE_PAYLOAD_ENCODING) return null;
  const bundleHash = text(metadata[BUNDLE_HASH_METADATA]);
  const tenantId = text(metadata[BUNDLE_TENANT_METADATA]);
  const projectId = text(metadata[BUNDLE_PROJECT_METADATA]);
  if (!HASH_PATTERN.test(bundleHash) || !tenantId || !projectId) throw new Error('Session bundle payload without its hash and owner');
  return { bundleHash, owner: { tenantId, projectId } };
}

function bundleReference(bundleHash: string, owner: SessionBundleOwner): Payload {
  return {
    metadata: { encoding: Buffer.from(SESSION_BUNDLE_REF_ENCODING) },
    data: Buffer.from(JSON.stringify({ bundleHash, tenantId: owner.tenantId, projectId: owner.projectId })),
  };
}

/** The bundle `payload` refers to, when it is a bundle reference (by its encoding), else null. */
function referenceOf(payload: HistoryPayload): BundleReference | null {
  const encoding = text(payload.metadata?.encoding);
  if (encoding === SESSION_BUNDLE_REF_ENCODING) {
    const ref = JSON.parse(text(payload.data)) as { bundleHash?: unknown; tenantId?: unknown; projectId?: unknown };
    if (typeof ref.bundleHash !== 'string' || typeof ref.tenantId !== 'string' || typeof ref.projectId !== 'string') throw new Error('Malformed session bundle reference');
    return { bundleHash: ref.bundleHash, owner: { tenantId: ref.tenantId, projectId: ref.projectId } };
  }
  if (encoding === LEGACY_SESSION_BUNDLE_ENCODING && payload.data) return { bundleHash: text(payload.data), owner: null };
  return null;
}

const sameOwner = (payload: Payload, owner: SessionBundleOwner) =>
  text(payload.metadata?.[BUNDLE_TENANT_METADATA]) === owner.tenantId && text(payload.metadata?.[BUNDLE_PROJECT_METADATA]) === owner.projectId;

/** The bundle payload a reference names: this worker's copy, else rebuilt from MongoDB, within its owner's project. */
async function bundlePayload(store: SessionBundleStore, { bundleHash, owner }: BundleReference): Promise<Payload> {
  const held = store.payloads.get(bundleHash) as Payload | undefined;
  if (held && (!owner || sameOwner(held, owner))) return held;
  const bundle = await store.loadByHash(bundleHash, owner);
  if (!bundle) throw new Error(`Session bundle ${bundleHash} is not recorded for its project, or a version it pins was deleted`);
  const payload = payloadConverter.toPayload(bundle);
  store.payloads.set(bundleHash, payload);
  return payload;
}

/**
 * The worker's payload codec: a bundle's payload leaves as a reference holding its hash and owner
 * and comes back as the bundle; every other payload passes unchanged.
 */
export function sessionBundleCodec(store: SessionBundleStore): PayloadCodec {
  return {
    async encode(payloads) {
      return payloads.map((payload) => {
        const bundle = bundleOfPayload(payload);
        if (!bundle) return payload;
        store.payloads.set(bundle.bundleHash, payload);
        return bundleReference(bundle.bundleHash, bundle.owner);
      });
    },
    async decode(payloads) {
      return Promise.all(
        payloads.map((payload) => {
          const ref = referenceOf(payload);
          return ref ? bundlePayload(store, ref) : payload;
        }),
      );
    },
  };
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
        const ref = referenceOf(child as HistoryPayload);
        if (ref) {
          const payload = await bundlePayload(store, ref);
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

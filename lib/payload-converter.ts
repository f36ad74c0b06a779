// The payload converter of every worker (and of the workflow bundle, which loads it by path): the
// SDK's default one, plus a payload encoding of its own for session bundles. A bundle is known by
// a mark its store sets on the object (markSessionBundle), never by what its JSON says, so no data
// that crosses the platform (a tool's answer, a callback's body) can pass for one. Imports nothing
// but the SDK: it runs inside the workflow sandbox too.
import {
  BinaryPayloadConverter,
  CompositePayloadConverter,
  JsonPayloadConverter,
  METADATA_ENCODING_KEY,
  UndefinedPayloadConverter,
  ValueError,
  type Payload,
  type PayloadConverterWithEncoding,
} from '@temporalio/common';
// The SDK's own UTF-8 helpers: the workflow sandbox has no Buffer (nor, in every version, TextEncoder).
import { decode, encode } from '@temporalio/common/lib/encoding';

/** `encoding` of a session bundle's payload; its data is the bundle's JSON. */
export const SESSION_BUNDLE_PAYLOAD_ENCODING = 'json/switchboard-session-bundle';
/** Metadata of a session bundle's payload: its hash and whose it is. */
export const BUNDLE_HASH_METADATA = 'bundle-hash';
export const BUNDLE_TENANT_METADATA = 'bundle-tenant';
export const BUNDLE_PROJECT_METADATA = 'bundle-project';

/** A property no JSON can create, shared by every copy of this module in the process. */
const SESSION_BUNDLE_MARK = Symbol.for('switchboard.session-bundle');

export interface SessionBundleOwner {
  tenantId: string;
  projectId: string;
}

/** Marks `bundle` (one with its `bundleHash`) as a session bundle of `owner`; returns it. */
export function markSessionBundle<T extends { bundleHash: string }>(bundle: T, owner: SessionBundleOwner): T {
  Object.defineProperty(bundle, SESSION_BUNDLE_MARK, { value: { tenantId: owner.tenantId, projectId: owner.projectId }, enumerable: false });
  return bundle;
}

function ownerOf(value: unknown): SessionBundleOwner | undefined {
  return value !== null && typeof value === 'object' ? ((value as Record<symbol, SessionBundleOwner | undefined>)[SESSION_BUNDLE_MARK] ?? undefined) : undefined;
}

const utf8 = (s: string) => encode(s);

class SessionBundlePayloadConverter implements PayloadConverterWithEncoding {
  readonly encodingType = SESSION_BUNDLE_PAYLOAD_ENCODING;

  toPayload(value: unknown): Payload | undefined {
    const owner = ownerOf(value);
    if (!owner) return undefined;
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: utf8(SESSION_BUNDLE_PAYLOAD_ENCODING),
        [BUNDLE_HASH_METADATA]: utf8((value as { bundleHash: string }).bundleHash),
        [BUNDLE_TENANT_METADATA]: utf8(owner.tenantId),
        [BUNDLE_PROJECT_METADATA]: utf8(owner.projectId),
      },
      data: utf8(JSON.stringify(value)),
    };
  }

  fromPayload<T>(payload: Payload): T {
    if (!payload.data) throw new ValueError('Session bundle payload has no data');
    return JSON.parse(decode(payload.data)) as T;
  }
}

export const payloadConverter = new CompositePayloadConverter(
  new UndefinedPayloadConverter(),
  new BinaryPayloadConverter(),
  new SessionBundlePayloadConverter(),
  new JsonPayloadConverter(),
);

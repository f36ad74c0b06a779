// The proof a call's status callback URL carries that the call belongs to the connection the URL
// names: an HMAC of both ids under a key derived from the master ring. Twilio signs the whole URL,
// so a callback that carries a valid one needs no store read to be judged the connection's; one
// without it (a call placed before refs, or a master key rotated since) is judged by a read.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { type KeyRing } from '../../lib/key-ring';

const REF_BYTES = 16;
const derived = new WeakMap<Buffer, Buffer>();

function refKey(master: Buffer): Buffer {
  let key = derived.get(master);
  if (!key) derived.set(master, (key = deriveKey(master, KEY_PURPOSE.outboundCallRef)));
  return key;
}

function refUnder(master: Buffer, connectionId: string, outboundCallId: string): Buffer {
  return createHmac('sha256', refKey(master)).update(`${connectionId}\n${outboundCallId}`).digest().subarray(0, REF_BYTES);
}

/** The ref of a call placed on a connection, under the ring's current key (22 base64url characters). */
export function outboundCallRef(ring: KeyRing, connectionId: string, outboundCallId: string): string {
  return refUnder(ring.current.key, connectionId, outboundCallId).toString('base64url');
}

/** Whether `ref` proves the call is the connection's, under any key of the ring; compared in constant time. */
export function isOutboundCallRef(ring: KeyRing, connectionId: string, outboundCallId: string, ref: string | undefined): boolean {
  if (!ref || !/^[A-Za-z0-9_-]{22}$/.test(ref)) return false;
  const given = Buffer.from(ref, 'base64url');
  let matched = false;
  for (const master of ring.byId.values()) {
    // Every key is tried, so the time taken does not say which one matched.
    if (timingSafeEqual(given, refUnder(master, connectionId, outboundCallId))) matched = true;
  }
  return matched;
}

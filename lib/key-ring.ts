// A ring of named 32-byte keys from configuration, written `id:base64,id:base64` with the newest
// first: the first key encrypts, every key decrypts what was written under its id. Rotation is
// adding a new key at the front, re-encrypting (or re-wrapping) with it, then dropping the old one.
import { z } from 'zod';

export interface NamedKey {
  id: string;
  key: Buffer;
}

export interface KeyRing {
  /** The key new values are encrypted with (the first listed). */
  current: NamedKey;
  /** Every configured key by id, the current one included. */
  byId: ReadonlyMap<string, Buffer>;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** Parses a ring; throws an Error that says which entry is wrong (never the key material). */
export function parseKeyRing(spec: string): KeyRing {
  const entries = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('lists no key: write id:base64key[,id:base64key…], newest first');
  const byId = new Map<string, Buffer>();
  let current: NamedKey | null = null;
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon) : '';
    if (!KEY_ID.test(id)) throw new Error(`entry ${i + 1} must be id:base64key with an id of 1-32 letters, digits, _ or -`);
    const key = Buffer.from(entry.slice(colon + 1), 'base64');
    if (key.length !== 32) throw new Error(`key "${id}" must be 32 bytes, base64-encoded (openssl rand -base64 32)`);
    if (byId.has(id)) throw new Error(`key id "${id}" is listed twice`);
    byId.set(id, key);
    current ??= { id, key };
  });
  return { current: current!, byId };
}

/** A ring holding one key, e.g. a single configured master key under a fixed id. */
export function singleKeyRing(id: string, keyBase64: string): KeyRing {
  return parseKeyRing(`${id}:${keyBase64}`);
}

/** Config schema for a key ring variable: validated at start-up, kept as its text. */
export const keyRingSetting = z
  .string()
  .superRefine((value, issue) => {
    try {
      parseKeyRing(value);
    } catch (err) {
      issue.addIssue({ code: 'custom', message: (err as Error).message });
    }
  })
  .optional();

// The keys of user JWTs: JWT_SECRET signs, and JWT_PREVIOUS_SECRETS still verify what they signed,
// so the secret can be rotated without signing everyone out. Each key is known by a `kid` derived
// from it (a hash, never the secret), which every issued token names in its header.
import { createHash } from 'node:crypto';

export interface JwtKey {
  kid: string;
  key: Uint8Array;
}

export interface JwtKeyRing {
  /** The key that signs. */
  current: JwtKey;
  /** Every key that verifies, the current one first. */
  all: JwtKey[];
}

const rings = new WeakMap<object, JwtKeyRing>();

function toKey(secret: string): JwtKey {
  const kid = createHash('sha256').update(`switchboard-jwt-kid:${secret}`).digest('hex').slice(0, 16);
  return { kid, key: new TextEncoder().encode(secret) };
}

/** The ring of a configuration, built once per configuration object. */
export function jwtKeyRing(config: { JWT_SECRET: string; JWT_PREVIOUS_SECRETS: string[] }): JwtKeyRing {
  let ring = rings.get(config);
  if (!ring) {
    const current = toKey(config.JWT_SECRET);
    const previous = config.JWT_PREVIOUS_SECRETS.filter((s) => s !== config.JWT_SECRET).map(toKey);
    ring = { current, all: [current, ...previous] };
    rings.set(config, ring);
  }
  return ring;
}

// Signed media tokens: the credential of a recording's proxied media URL. A token is an HS256 JWT
// (jose) bound to tenant, project, recording, file index, disposition and the platform key that
// asked for the list; it lives RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS. Its key is derived from the
// JWT secret ring (lib/jwt-keys.ts) under a label of its own, so rotating JWT_SECRET rotates it,
// JWT_PREVIOUS_SECRETS still verify what they signed, and a user JWT can never pass for a token.
import { hkdfSync } from 'node:crypto';
import { jwtVerify, SignJWT, decodeProtectedHeader } from 'jose';
import { jwtKeyRing, type JwtKey } from '../../lib/jwt-keys';
import { DomainError } from '../../lib/errors';

export const MEDIA_DISPOSITIONS = ['attachment', 'inline'] as const;
export type MediaDisposition = (typeof MEDIA_DISPOSITIONS)[number];

export interface MediaTokenClaims {
  tenantId: string;
  projectId: string;
  recordingId: string;
  objectIndex: number;
  disposition: MediaDisposition;
  /** The platform key (`ak-` id) that issued the token. */
  keyId: string;
}

const AUDIENCE = 'recording-media';
const derived = new WeakMap<JwtKey, JwtKey>();

/** The media-token key of one JWT key: HKDF-SHA256 of the secret, with its own kid. */
function mediaKey(key: JwtKey): JwtKey {
  let out = derived.get(key);
  if (!out) {
    const bytes = new Uint8Array(hkdfSync('sha256', key.key, new Uint8Array(0), 'switchboard recording media token v1', 32));
    out = { kid: `rm-${key.kid}`, key: bytes };
    derived.set(key, out);
  }
  return out;
}

type KeyConfig = { JWT_SECRET: string; JWT_PREVIOUS_SECRETS: string[]; JWT_ISSUER: string };

export async function signMediaToken(config: KeyConfig, claims: MediaTokenClaims, ttlSeconds: number): Promise<string> {
  const key = mediaKey(jwtKeyRing(config).current);
  return new SignJWT({ ten: claims.tenantId, prj: claims.projectId, rec: claims.recordingId, idx: claims.objectIndex, dis: claims.disposition })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid })
    .setIssuer(config.JWT_ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(claims.keyId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key.key);
}

const invalid = () => new DomainError('INVALID_RECORDING_MEDIA_TOKEN', 'The media token is invalid, expired or does not match this URL; list the recordings again for a fresh URL');

/** The claims of a token this platform signed and that has not expired, else 401 INVALID_RECORDING_MEDIA_TOKEN. */
export async function verifyMediaToken(config: KeyConfig, token: string): Promise<MediaTokenClaims> {
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    throw invalid();
  }
  const key = jwtKeyRing(config).all.map(mediaKey).find((k) => k.kid === kid);
  if (!key) throw invalid();
  try {
    const { payload } = await jwtVerify(token, key.key, { algorithms: ['HS256'], issuer: config.JWT_ISSUER, audience: AUDIENCE });
    const { ten, prj, rec, idx, dis, sub } = payload as Record<string, unknown>;
    if (typeof ten !== 'string' || typeof prj !== 'string' || typeof rec !== 'string' || typeof sub !== 'string') throw invalid();
    if (typeof idx !== 'number' || !Number.isInteger(idx) || idx < 0) throw invalid();
    if (dis !== 'attachment' && dis !== 'inline') throw invalid();
    return { tenantId: ten, projectId: prj, recordingId: rec, objectIndex: idx, disposition: dis, keyId: sub };
  } catch {
    throw invalid();
  }
}

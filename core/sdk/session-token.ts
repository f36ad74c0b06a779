// SDK session tokens: short-lived HS256 JWTs that `POST /api/v1/sdk/init` hands an embedded
// widget. A token names the tenant, project, public key, page origin, environment and end user
// it was issued for; a chat made with it belongs to that end user alone. The key is derived from
// the current master key (like the sandbox token's), so nothing new has to be configured.
import { randomBytes } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { DomainError } from '../../lib/errors';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { type CoreContext } from '../context';
import { type SdkUser } from './user-assertion';

export const SDK_TOKEN_ISSUER = 'switchboard-sdk';
export const SDK_TOKEN_AUDIENCE = 'switchboard-sdk';

export interface SdkTokenClaims {
  tenantId: string;
  projectId: string;
  publicKeyId: string;
  origin: string;
  environment: string;
  /** The end user: `eu-…` for an anonymous visitor, `id-…` for an identified one. */
  endUserId: string;
  /** What a user assertion said of an identified end user (core/sdk/user-assertion.ts). */
  user?: SdkUser | null;
}

/**
 * How long after its expiry a token still carries its anonymous end user over to a new one
 * (SDK init's `previousToken`): a page that comes back within it continues its conversation.
 */
export const SDK_RENEWAL_WINDOW_SECONDS = 30 * 24 * 3600;

/** A fresh anonymous end-user id. */
export const newAnonymousEndUserId = () => `eu-${randomBytes(16).toString('hex')}`;

/** The signing key, or 503 when no master key is configured. */
export function sdkTokenKey(ctx: Pick<CoreContext, 'config'>): Uint8Array {
  try {
    return deriveKey(requireMasterKeys(ctx as CoreContext).current.key, KEY_PURPOSE.sdkSessionToken);
  } catch {
    throw new DomainError('SERVICE_UNAVAILABLE', 'SDK sessions are not configured: set ENCRYPTION_KEYS or ENCRYPTION_KEY');
  }
}

export async function issueSdkToken(ctx: Pick<CoreContext, 'config'>, claims: SdkTokenClaims, ttlSeconds = ctx.config.SDK_TOKEN_TTL_SECONDS) {
  const now = Math.floor(Date.now() / 1000);
  const expiresAt = new Date((now + ttlSeconds) * 1000);
  const token = await new SignJWT({ tid: claims.tenantId, pid: claims.projectId, pkid: claims.publicKeyId, org: claims.origin, env: claims.environment, ...(claims.user ? { usr: claims.user } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(SDK_TOKEN_ISSUER)
    .setAudience(SDK_TOKEN_AUDIENCE)
    .setSubject(claims.endUserId)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(sdkTokenKey(ctx));
  return { token, expiresAt };
}

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** The claims of a valid token, or 401 (expired, forged, malformed). */
export async function verifySdkToken(ctx: Pick<CoreContext, 'config'>, token: string): Promise<SdkTokenClaims> {
  const key = sdkTokenKey(ctx);
  try {
    const { payload } = await jwtVerify(token, key, { issuer: SDK_TOKEN_ISSUER, audience: SDK_TOKEN_AUDIENCE, algorithms: ['HS256'] });
    const { tid, pid, pkid, org, env, sub, usr } = payload;
    if (!str(tid) || !str(pid) || !str(pkid) || !str(org) || !str(env) || !str(sub)) throw new DomainError('UNAUTHORIZED', 'Invalid SDK token');
    const user = usr && typeof usr === 'object' && str((usr as SdkUser).userId) ? (usr as SdkUser) : null;
    return { tenantId: tid, projectId: pid, publicKeyId: pkid, origin: org, environment: env, endUserId: sub, user };
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if (err instanceof joseErrors.JWTExpired) throw new DomainError('UNAUTHORIZED', 'SDK token has expired');
    throw new DomainError('UNAUTHORIZED', 'Invalid SDK token');
  }
}

/**
 * The claims of a token SDK init may renew: signed with the current key, issued to this SDK, and
 * expired no longer than SDK_RENEWAL_WINDOW_SECONDS ago; null for anything else (forged,
 * malformed, too old, signed under a master key since rotated). Whose key, project, origin and
 * end user it names is for the caller to judge.
 */
export async function renewableSdkToken(ctx: Pick<CoreContext, 'config'>, token: string): Promise<SdkTokenClaims | null> {
  try {
    const { payload } = await jwtVerify(token, sdkTokenKey(ctx), {
      issuer: SDK_TOKEN_ISSUER,
      audience: SDK_TOKEN_AUDIENCE,
      algorithms: ['HS256'],
      clockTolerance: SDK_RENEWAL_WINDOW_SECONDS,
      requiredClaims: ['exp', 'iat'],
    });
    const { tid, pid, pkid, org, env, sub } = payload;
    if (!str(tid) || !str(pid) || !str(pkid) || !str(org) || !str(env) || !str(sub)) return null;
    return { tenantId: tid, projectId: pid, publicKeyId: pkid, origin: org, environment: env, endUserId: sub };
  } catch (err) {
    // No master key is the only refusal that is not the token's: init answers 503 for it.
    if (err instanceof DomainError) throw err;
    return null;
  }
}

// The sandbox token: a short-lived HS256 JWT the runtime issues for one sandboxed tool call, naming
// the tenant, project, session and tool call it acts for. The memory-store endpoint accepts nothing
// else, and only for the session the token names.
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { DomainError } from '../../lib/errors';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { type CoreContext } from '../context';

export const SANDBOX_TOKEN_ISSUER = 'switchboard-runtime';
export const SANDBOX_TOKEN_AUDIENCE = 'switchboard-memory';

export interface SandboxTokenClaims {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The tool call the token was issued for (the interpreter's command id). */
  toolCallId: string;
  tool: string;
}

/** The signing key, or 503 "Sandbox auth not configured" (production without SANDBOX_JWT_SECRET, or no master key). */
export function sandboxTokenKey(ctx: Pick<CoreContext, 'config'>): Uint8Array {
  if (ctx.config.SANDBOX_JWT_SECRET) return new TextEncoder().encode(ctx.config.SANDBOX_JWT_SECRET);
  if (ctx.config.NODE_ENV === 'production') throw new DomainError('SERVICE_UNAVAILABLE', 'Sandbox auth not configured');
  try {
    return deriveKey(requireMasterKeys(ctx as CoreContext).current.key, KEY_PURPOSE.sandboxToken);
  } catch {
    throw new DomainError('SERVICE_UNAVAILABLE', 'Sandbox auth not configured');
  }
}

/** A token for one call, valid for `ttlMs` (the call's timeout plus a margin). */
export async function issueSandboxToken(ctx: Pick<CoreContext, 'config'>, claims: SandboxTokenClaims, ttlMs: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tid: claims.tenantId, pid: claims.projectId, sid: claims.sessionId, tcid: claims.toolCallId, tool: claims.tool })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(SANDBOX_TOKEN_ISSUER)
    .setAudience(SANDBOX_TOKEN_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + Math.max(1, Math.ceil(ttlMs / 1000)))
    .sign(sandboxTokenKey(ctx));
}

/**
 * The claims of a valid token. 401 UNAUTHORIZED for a bad signature, a wrong issuer or audience,
 * an expired or malformed token; 400 VALIDATION_ERROR "Token missing sessionId" for a valid token
 * without a session; 503 when sandbox auth is not configured.
 */
export async function verifySandboxToken(ctx: Pick<CoreContext, 'config'>, token: string): Promise<SandboxTokenClaims> {
  const key = sandboxTokenKey(ctx);
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'], issuer: SANDBOX_TOKEN_ISSUER, audience: SANDBOX_TOKEN_AUDIENCE }));
  } catch (err) {
    const expired = err instanceof joseErrors.JWTExpired;
    throw new DomainError('UNAUTHORIZED', expired ? 'Sandbox token expired' : 'Invalid sandbox token');
  }
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  if (!str(payload.sid)) throw new DomainError('VALIDATION_ERROR', 'Token missing sessionId');
  if (!str(payload.tid) || !str(payload.pid)) throw new DomainError('UNAUTHORIZED', 'Invalid sandbox token');
  return { tenantId: str(payload.tid), projectId: str(payload.pid), sessionId: str(payload.sid), toolCallId: str(payload.tcid), tool: str(payload.tool) };
}

// Identified end users: the customer's backend vouches for its signed-in user with a user
// assertion, an HS256 JWT signed with the public key's identity secret (shown when the key is
// made). SDK init turns a valid one into an end user that is the same on every init (so it
// finds its sessions again) and whose chats link to the contact of its e-mail, phone or user id.
import { createHash, createHmac } from 'node:crypto';
import { errors as joseErrors, jwtVerify } from 'jose';
import { DomainError } from '../../lib/errors';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { type CoreContext } from '../context';

/** The longest an assertion may be valid for, from its `iat` to its `exp`. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 3600;

export interface SdkUser {
  userId: string;
  email: string | null;
  phone: string | null;
  displayName: string | null;
}

/** The identity secret of a public key (`pkis_` + 64 hex); derived, never stored. */
export function identitySecretOf(ctx: Pick<CoreContext, 'config'>, publicKeyId: string): string {
  let root: Buffer;
  try {
    root = deriveKey(requireMasterKeys(ctx as CoreContext).current.key, KEY_PURPOSE.sdkIdentitySecret);
  } catch {
    throw new DomainError('SERVICE_UNAVAILABLE', 'SDK sessions are not configured: set ENCRYPTION_KEYS or ENCRYPTION_KEY');
  }
  return `pkis_${createHmac('sha256', root).update(publicKeyId).digest('hex')}`;
}

/** The stable end-user id of an identified user of a project. */
export const identifiedEndUserId = (projectId: string, userId: string) => `id-${createHash('sha256').update(`${projectId}\n${userId}`).digest('hex').slice(0, 32)}`;

const text = (v: unknown, max: number): string | null => (typeof v === 'string' && v.trim().length > 0 && v.length <= max ? v.trim() : null);

/**
 * The user a valid assertion names, or 401: signed with the key's identity secret, audience the
 * public key's id, `sub` the customer's user id, `exp` required and at most an hour after `iat`.
 */
export async function verifyUserAssertion(ctx: Pick<CoreContext, 'config'>, publicKeyId: string, assertion: string): Promise<SdkUser> {
  const secret = new TextEncoder().encode(identitySecretOf(ctx, publicKeyId));
  try {
    const { payload } = await jwtVerify(assertion, secret, { audience: publicKeyId, algorithms: ['HS256'], requiredClaims: ['sub', 'exp', 'iat'] });
    const userId = text(payload.sub, 200);
    if (!userId || payload.exp! - payload.iat! > MAX_ASSERTION_LIFETIME_SECONDS) throw new DomainError('UNAUTHORIZED', 'Invalid user assertion');
    return { userId, email: text(payload.email, 320), phone: text(payload.phone, 32), displayName: text(payload.name, 200) };
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if (err instanceof joseErrors.JWTExpired) throw new DomainError('UNAUTHORIZED', 'User assertion has expired');
    throw new DomainError('UNAUTHORIZED', 'Invalid user assertion');
  }
}

// What a credential may put into a key or a scope it makes: never more than it holds. The grants
// of a scope it creates or changes, the grants or permissions of a key it makes, and that key's
// environments and expiry are bounded by the caller's own (docs/public-api.md "Keys and scopes
// never widen"), and so is what it may revoke: no key it could not have made. The operator's CLI makes keys with no caller, so with no bound but the tenant,
// project and scope it names. Every refusal is 403 FORBIDDEN and changes nothing.
import { DomainError } from '../../lib/errors';
import { hasGrant, isScopeGrantName } from '../../lib/api-scopes';
import { hasPermission, type Permission, type Principal } from '../../lib/permissions';

/** The catalogue names among `grants` that the principal does not hold itself (lib/permissions.ts `hasGrant`). */
export function grantsNotHeld(principal: Principal, grants: Iterable<string>): string[] {
  return [...new Set(grants)].filter((name) => isScopeGrantName(name) && !hasGrant(principal, name));
}

/** 403 unless the principal holds every name in `grants`; `what` says what would have held them. */
export function requireGrantsHeld(principal: Principal, grants: Iterable<string>, what: string): void {
  const missing = grantsNotHeld(principal, grants);
  if (missing.length > 0) {
    throw new DomainError('FORBIDDEN', `${what} would grant what this credential does not hold: ${missing.join(', ')}`);
  }
}

/** 403 unless the principal holds every permission (`admin` holds them all); `what` says who would have held them. */
export function requirePermissionsHeld(principal: Principal, permissions: readonly Permission[], what: string): void {
  const missing = [...new Set(permissions)].filter((p) => !hasPermission(principal, p));
  if (missing.length > 0) {
    throw new DomainError('FORBIDDEN', `${what} would hold permissions this credential does not hold: ${missing.join(', ')}`);
  }
}

/**
 * The environments of a key the principal makes. A principal bound to environments gives its own
 * when none are asked for (never "all"), and refuses any it is not bound to; an unbound one gives
 * what is asked (none: every environment).
 */
export function boundedEnvironments(principal: Principal, requested: readonly string[] | undefined): string[] {
  const own = principal.environments && principal.environments.length > 0 ? principal.environments : null;
  if (!own) return [...new Set(requested ?? [])];
  if (requested === undefined) return [...own];
  const outside = [...new Set(requested)].filter((e) => !own.includes(e));
  if (requested.length === 0 || outside.length > 0) {
    throw new DomainError('FORBIDDEN', `This key is bound to ${own.join(', ')}; it cannot make a key for ${outside.join(', ') || 'every environment'}`);
  }
  return [...new Set(requested)];
}

/**
 * The expiry of a key the principal makes: a key that expires gives its own expiry when none is
 * asked for (`undefined`) and refuses a later one or none (`null`, never); a key that never
 * expires, or a user, gives what is asked.
 */
export function boundedExpiry(principal: Principal, requested: Date | null | undefined): Date | null {
  const own = principal.expiresAt ?? null;
  if (!own) return requested ?? null;
  if (requested === undefined) return own;
  if (requested === null || requested.getTime() > own.getTime()) {
    throw new DomainError('FORBIDDEN', `This key expires at ${own.toISOString()}; it cannot make a key that outlives it`);
  }
  return requested;
}

/**
 * 403 unless the principal could have made the key it would revoke: it holds every grant of the
 * key's scope (a scoped key) or every permission (another key), and the key acts in no
 * environment the principal is not bound to. A narrow key thus never takes a wider one away.
 */
export function requireKeyWithinReach(
  principal: Principal,
  key: { permissions: readonly string[]; environments: readonly string[] },
  scopeGrants: readonly string[] | null,
): void {
  if (scopeGrants) requireGrantsHeld(principal, scopeGrants, 'Revoking this key: the key');
  else requirePermissionsHeld(principal, key.permissions as Permission[], 'Revoking this key: the key');
  const own = principal.environments && principal.environments.length > 0 ? principal.environments : null;
  if (!own) return;
  const outside = key.environments.length === 0 ? ['every environment'] : key.environments.filter((e) => !own.includes(e));
  if (outside.length > 0) throw new DomainError('FORBIDDEN', `This key is bound to ${own.join(', ')}; it cannot revoke a key for ${outside.join(', ')}`);
}

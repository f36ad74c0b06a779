// The environments a platform key can be bound to, and the check every environment-scoped route
// makes: a key bound to `staging` cannot act on `production` (docs/public-api.md).
import { DomainError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';

export const KEY_ENVIRONMENTS = ['dev', 'staging', 'production'] as const;

/** 403 when the principal's key is bound to environments that do not include `environment`. */
export function requireEnvironment(principal: Principal, environment: string): void {
  if (canActInEnvironment(principal, environment)) return;
  throw new DomainError('FORBIDDEN', `This key is bound to ${principal.environments!.join(', ')}; it cannot act on ${environment} resources`);
}

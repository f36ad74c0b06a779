// What a credential may put into a key or scope it makes: never more than it holds (grants,
// permissions, environments, expiry), and the defaults a bound caller passes on.
import { boundedEnvironments, boundedExpiry, grantsNotHeld, requireGrantsHeld, requirePermissionsHeld } from '../../../../core/platform-keys/bounds';
import { type Permission, type Principal } from '../../../../lib/permissions';

const key = (over: Partial<Principal> = {}): Principal => ({
  kind: 'api_key',
  subjectId: 'ak-1',
  tenantId: 't',
  projectId: 'p',
  permissions: new Set<Permission>(),
  ...over,
});
const scoped = (grants: string[], over: Partial<Principal> = {}) => key({ scope: { id: 'as-1', grants: new Set(grants) }, ...over });

it('lets a scoped key grant exactly its names, and a permission-style key the names its permissions cover', () => {
  const manager = scoped(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']);
  expect(grantsNotHeld(manager, ['SESSIONS_LIST', 'API_SCOPE_KEY_FULL'])).toEqual([]);
  // APP_VIEW maps to permissions the key partly has: still not held, by name.
  expect(grantsNotHeld(manager, ['APP_VIEW', 'SESSIONS_LIST', 'sessions.read', 'APP_VIEW'])).toEqual(['APP_VIEW', 'sessions.read']);
  expect(() => requireGrantsHeld(manager, ['APP_FULL'], 'The scope')).toThrow(expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringContaining('APP_FULL') }));

  const reader = key({ permissions: new Set<Permission>(['session:read', 'api_key:manage']) });
  expect(grantsNotHeld(reader, ['SESSIONS_LIST', 'sessions.read', 'analytics.read'])).toEqual([]);
  expect(grantsNotHeld(reader, ['APP_VIEW', 'recordings.read'])).toEqual(['APP_VIEW', 'recordings.read']);
  expect(grantsNotHeld(key({ permissions: new Set<Permission>(['admin']) }), ['APP_FULL', 'recordings.read'])).toEqual([]);
  // Stored names outside the catalogue grant nothing, so they widen nothing.
  expect(grantsNotHeld(reader, ['NOT_A_NAME'])).toEqual([]);

  expect(() => requirePermissionsHeld(reader, ['session:read'], 'The key')).not.toThrow();
  expect(() => requirePermissionsHeld(reader, ['session:read', 'admin'], 'The key')).toThrow(expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringContaining('admin') }));
});

it("keeps a bound caller's keys within its environments, and passes its own on when none are asked", () => {
  const staging = key({ environments: ['staging', 'dev'] });
  expect(boundedEnvironments(staging, undefined)).toEqual(['staging', 'dev']);
  expect(boundedEnvironments(staging, ['dev', 'dev'])).toEqual(['dev']);
  expect(() => boundedEnvironments(staging, ['production'])).toThrow(expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringMatching(/staging, dev.*production/) }));
  expect(() => boundedEnvironments(staging, [])).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  // Unbound: what is asked, and none means every environment.
  expect(boundedEnvironments(key(), undefined)).toEqual([]);
  expect(boundedEnvironments(key({ environments: [] }), ['production'])).toEqual(['production']);
});

it("keeps an expiring caller's keys within its lifetime, and passes its expiry on when none is asked", () => {
  const own = new Date('2030-01-01T00:00:00Z');
  const expiring = key({ expiresAt: own });
  expect(boundedExpiry(expiring, undefined)).toEqual(own);
  expect(boundedExpiry(expiring, new Date('2029-06-01T00:00:00Z'))).toEqual(new Date('2029-06-01T00:00:00Z'));
  expect(boundedExpiry(expiring, own)).toEqual(own);
  expect(() => boundedExpiry(expiring, null)).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  expect(() => boundedExpiry(expiring, new Date(own.getTime() + 1))).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  // A key that never expires, or a user: what is asked; none is never.
  expect(boundedExpiry(key(), undefined)).toBeNull();
  expect(boundedExpiry(key({ kind: 'user_jwt' }), null)).toBeNull();
  expect(boundedExpiry(key(), own)).toEqual(own);
});

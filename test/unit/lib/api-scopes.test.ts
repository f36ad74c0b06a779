// The scope vocabulary: every name is known and documented once, maps only onto real
// permissions, and permission-style keys hold exactly the names their permissions cover.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  GRANT_TO_PERMISSIONS,
  OPERATION_SCOPES,
  SCOPE_GRANT_NAMES,
  SCOPE_PERMISSION_NAMES,
  grantsToPermissionObject,
  hasGrant,
  permissionsHoldGrant,
  permissionsOfGrants,
} from '../../../lib/api-scopes';
import { hasPermission, isPermission, type Permission, type Principal } from '../../../lib/permissions';

const principal = (permissions: Permission[], grants?: string[]): Principal => ({
  kind: 'api_key',
  subjectId: 'ak-1',
  tenantId: 't',
  projectId: 'p',
  permissions: grants ? permissionsOfGrants(grants) : new Set(permissions),
  scope: grants ? { id: 'as-1', grants: new Set(grants) } : null,
});

it('names every scope once, and maps names only onto permissions that exist (never admin)', () => {
  expect(new Set(SCOPE_GRANT_NAMES).size).toBe(SCOPE_GRANT_NAMES.length);
  for (const [name, permissions] of Object.entries(GRANT_TO_PERMISSIONS)) {
    expect(SCOPE_GRANT_NAMES).toContain(name);
    for (const p of permissions) expect(isPermission(p) && p !== 'admin').toBe(true);
  }
  for (const name of SCOPE_PERMISSION_NAMES) expect(GRANT_TO_PERMISSIONS[name]).toBeDefined();
  expect(OPERATION_SCOPES.map((s) => s.id)).toEqual(expect.arrayContaining(['outbound_calls.initiate', 'outbound_calls.read', 'recordings.read', 'chat.execute']));
});

it('documents every name in docs/public-api.md', () => {
  const doc = readFileSync(path.join(__dirname, '../../../docs/public-api.md'), 'utf8');
  for (const name of SCOPE_GRANT_NAMES) expect(doc).toContain(`\`${name}\``);
});

it('documents the permission map exactly as the code grants it', () => {
  const doc = readFileSync(path.join(__dirname, '../../../docs/public-api.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Permission map'), doc.indexOf('A permission-style key is judged'));
  let rows = 0;
  for (const line of section.split('\n')) {
    const row = /^\| `([a-z_:]+)` \| (.*) \|$/.exec(line);
    if (!row || row[1] === 'admin') continue;
    rows++;
    const documented = [...row[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]).sort();
    const granted = Object.entries(GRANT_TO_PERMISSIONS)
      .filter(([, permissions]) => permissions.includes(row[1] as Permission))
      .map(([name]) => name)
      .sort();
    expect([row[1], documented]).toEqual([row[1], granted]);
  }
  expect(rows).toBe(18);
});

it('gives the session routes what the spec names promise', () => {
  expect([...permissionsOfGrants(['SESSION_CREATION'])]).toEqual(['session:execute']);
  expect([...permissionsOfGrants(['SESSION_TERMINATION', 'RUN_API'])]).toEqual(['session:execute']);
  expect([...permissionsOfGrants(['SESSIONS_LIST'])]).toEqual(['session:read']);
  const full = permissionsOfGrants(['APP_FULL']);
  for (const p of ['agent:write', 'session:execute', 'deployment:create', 'project:export', 'human_task:write'] as const) expect(full.has(p)).toBe(true);
  expect(full.has('api_key:manage')).toBe(false);
});

it('lets a scoped key hold exactly its grants, and a permission-style key the names its permissions cover', () => {
  const scoped = principal([], ['outbound_calls.read', 'SESSIONS_LIST']);
  expect(hasGrant(scoped, 'outbound_calls.read')).toBe(true);
  expect(hasGrant(scoped, 'outbound_calls.initiate')).toBe(false);
  expect(hasPermission(scoped, 'session:read')).toBe(true);
  expect(hasPermission(scoped, 'session:execute')).toBe(false);

  const reader = principal(['session:read']);
  expect(hasGrant(reader, 'SESSIONS_LIST')).toBe(true);
  expect(hasGrant(reader, 'sessions.read')).toBe(true);
  expect(hasGrant(reader, 'SESSION_CREATION')).toBe(false);
  // A name that maps to no permission gates a surface of its own: only admin holds it.
  expect(hasGrant(reader, 'recordings.read')).toBe(false);
  expect(permissionsHoldGrant(new Set<Permission>(['admin']), 'recordings.read')).toBe(true);
  expect(permissionsHoldGrant(new Set<Permission>(['admin']), 'NOT_A_NAME')).toBe(false);
});

it('shows every name as YES or NO', () => {
  const object = grantsToPermissionObject(['APP_VIEW']);
  expect(Object.keys(object)).toEqual(SCOPE_GRANT_NAMES);
  expect(object.APP_VIEW).toBe('YES');
  expect(object.APP_EDIT).toBe('NO');
});

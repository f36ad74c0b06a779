// The admin CLI manages tenants straight against MongoDB with the same rules as the routes.
import { execFile } from 'node:child_process';
import { ROOT } from '../../infra/processes';
import { startTestStack, type TestStack } from '../support/stack';
import { client } from '../support/http';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.close());

/**
 * Runs the CLI without blocking this process: the API under test runs here, and a blocked event
 * loop lets its keep-alive timer close a connection just as the client reuses it (ECONNRESET).
 */
function admin(...args: string[]): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'infra/admin-cli.ts', ...args],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, MONGODB_URI: stack.config.MONGODB_URI } },
      (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, out: stdout, err: stderr }),
    );
  });
}

it('creates a tenant whose admin key works against the API, then a narrower key, then revokes it', async () => {
  const created = await admin('create-tenant', '--name', 'Cli Corp', '--project', 'Support');
  expect(created.status).toBe(0);
  const tenant = JSON.parse(created.out);
  expect(tenant.key).toMatch(/^abl_[0-9a-f]{48}$/);
  const api = client(stack.baseUrl);
  const projects = await api.get('/api/projects', { key: tenant.key });
  expect(projects.body.projects.map((p: { name: string }) => p.name)).toEqual(['Support']);

  const key = JSON.parse((await admin('create-key', '--tenant', tenant.tenant.id, '--name', 'ci', '--permissions', 'agent:read', '--project', tenant.project.id)).out);
  expect((await api.get('/api/auth/me', { key: key.key })).body.principal).toMatchObject({ projectId: tenant.project.id, permissions: ['agent:read'] });
  expect((await admin('revoke-key', '--tenant', tenant.tenant.id, '--key-id', key.apiKey.id)).status).toBe(0);
  expect((await api.get('/api/auth/me', { key: key.key })).status).toBe(401);
});

it('explains bad input and exits non-zero', async () => {
  const bad = await admin('create-key', '--tenant', 'x', '--name', 'k', '--permissions', 'agent:fly');
  expect(bad.status).toBe(1);
  expect(bad.err).toContain('unknown permission(s): agent:fly');
  const unknown = await admin('frobnicate');
  expect(unknown.status).toBe(1);
  expect(unknown.err).toContain('unknown command "frobnicate"');
  const dup = await admin('create-tenant', '--name', 'Cli Corp');
  expect(dup.status).toBe(1);
  expect(dup.err).toContain('CONFLICT');
});

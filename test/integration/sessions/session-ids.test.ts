// Session ids as callers name them: any string a caller could have been given is looked up (an
// unknown one is 404 and starts nothing); only absurd input is 400. The spec's literal sub-paths
// beside `sessions/:id` (generations, export) are never read as ids: they reach their own routes.
import { randomUUID } from 'node:crypto';
import { RESERVED_SESSION_SUBPATHS, SESSION_ID_MAX_LENGTH } from '../../../api/sessions/schemas';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent, seedSession } from './fixtures';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-session-ids');
  await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Support_Agent');
});
afterAll(() => stack.close());

const sessions = () => `/api/projects/${acme.projectId}/sessions`;

/** Every route that names a session in its path, as [method, path of the id]. */
const SESSION_ROUTES: [string, (id: string) => string][] = [
  ['GET', (id) => `${sessions()}/${id}`],
  ['DELETE', (id) => `${sessions()}/${id}`],
  ['POST', (id) => `${sessions()}/${id}/reset`],
  ['GET', (id) => `${sessions()}/${id}/traces`],
  ['GET', (id) => `${sessions()}/${id}/traces/span-1/children`],
  ['GET', (id) => `${sessions()}/${id}/metrics`],
  ['GET', (id) => `/api/v1/sessions/${id}/transcripts`],
];

const call = (method: string, path: string, json?: unknown) => {
  switch (method) {
    case 'GET':
      return api.get(path, { key: acme.adminKey });
    case 'DELETE':
      return api.delete(path, { key: acme.adminKey });
    default:
      return api.post(path, { key: acme.adminKey, json: json ?? {} });
  }
};

/** Ids a caller could have been given by some system: looked up, and unknown here. */
const LOOKED_UP_IDS = [
  'not-a-uuid',
  `s-${randomUUID()}`,
  'sess_abc123',
  randomUUID(),
  'séance-①',
  'a b',
  'x'.repeat(SESSION_ID_MAX_LENGTH),
];

describe('an id in the path', () => {
  it.each(SESSION_ROUTES)('%s %s: any plausible id is looked up and unknown is 404 NOT_FOUND', async (method, path) => {
    for (const id of LOOKED_UP_IDS) {
      const res = await call(method, path(encodeURIComponent(id)));
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 404,
        body: { success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } },
      });
    }
  });

  it.each(SESSION_ROUTES)('%s %s: an over-long id or one with control characters is 400', async (method, path) => {
    for (const id of ['x'.repeat(SESSION_ID_MAX_LENGTH + 1), 'a\u0001b', 'line\nbreak', 'nul\u0000']) {
      const res = await call(method, path(encodeURIComponent(id)));
      expect({ id, status: res.status, code: res.body.error?.code }).toEqual({ id, status: 400, code: 'VALIDATION_ERROR' });
      expect(res.body.error.message).toContain('params.id');
    }
  });

  it('an id with an encoded slash is looked up, not routed', async () => {
    const res = await api.get(`${sessions()}/${encodeURIComponent('a/b')}`, { key: acme.adminKey });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe('Session not found');
  });

  it('a stored session is still found by its id', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { status: 'ended' });
    const res = await api.get(`${sessions()}/${session._id}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.session.id).toBe(session._id);
  });
});

describe('POST /api/v1/chat/agent with a sessionId', () => {
  const chat = (sessionId: unknown) =>
    api.post('/api/v1/chat/agent', { key: acme.adminKey, json: { projectId: acme.projectId, message: 'hello', sessionId } });

  it('answers an unknown id of any plausible form with 404 and starts no session', async () => {
    const before = await stack.ctx.models.Session.countDocuments({ tenantId: acme.tenantId });
    const temporal = await stack.ctx.temporal.client();
    for (const id of LOOKED_UP_IDS) {
      const res = await chat(id);
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 404,
        body: { success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } },
      });
    }
    // A caller cannot name a new session: the UUID-shaped unknown id started no workflow.
    const uuid = LOOKED_UP_IDS.find((id) => /^[0-9a-f-]{36}$/.test(id))!;
    await expect(temporal.workflow.getHandle(`session/${uuid}`).describe()).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
    expect(await stack.ctx.models.Session.countDocuments({ tenantId: acme.tenantId })).toBe(before);
  });

  it.each([
    ['empty', ''],
    ['over the documented length', 'x'.repeat(SESSION_ID_MAX_LENGTH + 1)],
    ['with a control character', 'abc\u0007'],
    ['not a string', 42],
  ])('answers an id %s with 400 VALIDATION_ERROR naming body.sessionId', async (_label, id) => {
    const res = await chat(id);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain('body.sessionId');
  });

  it('continues a session it issued', async () => {
    const first = await api.post('/api/v1/chat/agent', { key: acme.adminKey, json: { projectId: acme.projectId, message: 'hello', agentId: 'Support_Agent' } });
    expect(first.status).toBe(200);
    const next = await chat(first.body.sessionId);
    expect(next.status).toBe(200);
    expect(next.body.sessionId).toBe(first.body.sessionId);
  });
});

describe('reserved sub-paths beside sessions/:id', () => {
  // `generations` and `export` are routes of their own (docs/sessions-api.md): never a session id.
  it('GET on each reserved sub-path reaches its own route, not a session lookup', async () => {
    const generations = await call('GET', `${sessions()}/generations`);
    expect(generations.status).toBe(200);
    expect(generations.body).toMatchObject({ success: true });
    const exported = await fetch(`${stack.baseUrl}${sessions()}/export?format=csv`, { headers: { 'x-api-key': acme.adminKey } });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toMatch(/^text\/csv/);
    await exported.text();
  });

  it.each(['DELETE', 'POST'])('%s on each reserved sub-path is 405 for its route, not a session lookup', async (method) => {
    for (const name of RESERVED_SESSION_SUBPATHS) {
      const res = await call(method, `${sessions()}/${name}`);
      expect({ name, status: res.status }).toEqual({ name, status: 405 });
      expect(res.headers.get('allow')).toBe('GET');
    }
  });

  it('below them is the unknown-route 404, and without a credential 401, never a session lookup', async () => {
    for (const name of RESERVED_SESSION_SUBPATHS) {
      for (const path of [`${sessions()}/${name}/reset`, `${sessions()}/${name}/traces`, `${sessions()}/${name}/metrics`]) {
        const res = await call(path.endsWith('reset') ? 'POST' : 'GET', path);
        expect({ path, status: res.status }).toEqual({ path, status: 404 });
        expect(res.body.error.message).toMatch(/^Route .* not found$/);
      }
      const anonymous = await api.get(`${sessions()}/${name}`);
      expect(anonymous.status).toBe(401);
    }
  });
});

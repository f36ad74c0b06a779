// Tenant isolation and the auth matrix on every session route: 401 without a credential, 403
// without the permission, and 404 "Session not found" for another tenant's session, a session
// of another project and an unknown id; none of them changes anything.
import { randomUUID } from 'node:crypto';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent, seedSession, seedTrace, seedTranscript } from './fixtures';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let acmeSession: string;
let globexSession: string;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-session-iso');
  globex = await seedTenant(stack.ctx, 'globex-session-iso');
  await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Acme_Agent');
  await createAgent(stack.baseUrl, globex.adminKey, globex.projectId, 'Globex_Agent');
  for (const [tenant, set] of [
    [acme, (id: string) => (acmeSession = id)],
    [globex, (id: string) => (globexSession = id)],
  ] as const) {
    const session = await seedSession(stack.ctx, { tenantId: tenant.tenantId, projectId: tenant.projectId });
    await seedTrace(stack.ctx, session, [
      { type: 'llm_call', spanId: 'a' },
      { type: 'response', spanId: 'b', parentSpanId: 'a' },
    ]);
    await seedTranscript(stack.ctx, session, [{ role: 'user', content: 'secret of ' + tenant.tenantId }]);
    set(session._id);
  }
});
afterAll(() => stack.close());

type Perm = 'session:read' | 'session:execute';
interface Call {
  method: 'get' | 'post' | 'delete';
  /** Path for a project and a session id. */
  path: (projectId: string, sessionId: string) => string;
  json?: unknown;
  perm: Perm;
  /** Tenant-wide route (no :projectId in the path). */
  tenantWide?: boolean;
}

const SESSION_ROUTES: Array<[string, Call]> = [
  ['detail', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/${s}`, perm: 'session:read' }],
  ['delete', { method: 'delete', path: (p, s) => `/api/projects/${p}/sessions/${s}`, perm: 'session:execute' }],
  ['reset', { method: 'post', path: (p, s) => `/api/projects/${p}/sessions/${s}/reset`, perm: 'session:execute' }],
  ['traces', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/${s}/traces?include=metrics`, perm: 'session:read' }],
  ['span children', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/${s}/traces/a/children`, perm: 'session:read' }],
  ['metrics', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/${s}/metrics`, perm: 'session:read' }],
  ['analysis', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/${s}/analysis`, perm: 'session:read' }],
  ['generations of a session', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/generations?sessionId=${s}`, perm: 'session:read' }],
  ['export of a session', { method: 'get', path: (p, s) => `/api/projects/${p}/sessions/export?format=csv&sessionId=${s}`, perm: 'session:read' }],
  ['transcripts', { method: 'get', path: (_p, s) => `/api/v1/sessions/${s}/transcripts`, perm: 'session:read', tenantWide: true }],
];

async function snapshot(): Promise<string> {
  const [sessions, traces, messages] = await Promise.all([
    stack.ctx.models.Session.find({}).sort({ _id: 1 }).lean(),
    stack.ctx.models.TraceEvent.countDocuments({}),
    stack.ctx.models.TranscriptMessage.countDocuments({}),
  ]);
  return JSON.stringify({ sessions, traces, messages });
}

const otherPerm = (perm: Perm): Perm[] => (perm === 'session:read' ? ['session:execute'] : ['session:read']);

describe.each(SESSION_ROUTES)('%s', (_label, call) => {
  const send = (key: string | undefined, projectId: string, sessionId: string) =>
    api[call.method](call.path(projectId, sessionId), { key, ...(call.json !== undefined ? { json: call.json } : {}) });

  it('answers 401 without a credential', async () => {
    const res = await send(undefined, acme.projectId, acmeSession);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it(`answers 403 to a key without ${call.perm}, changing nothing`, async () => {
    const key = await acme.keyWith([...otherPerm(call.perm), 'agent:read', 'agent:write']);
    const before = await snapshot();
    const res = await send(key, acme.projectId, acmeSession);
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining(`'${call.perm}'`) });
    expect(await snapshot()).toBe(before);
  });

  it("answers 404 Session not found for another tenant's session, changing nothing", async () => {
    const before = await snapshot();
    // Through the caller's own project: the session id belongs to the other tenant.
    const res = await send(acme.adminKey, acme.projectId, globexSession);
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
    expect(await snapshot()).toBe(before);
  });

  if (!call.tenantWide) {
    it("answers 404 for the other tenant's project path", async () => {
      const res = await send(acme.adminKey, globex.projectId, globexSession);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    });

    it('answers 404 Session not found for a session of another project of the same tenant', async () => {
      const before = await snapshot();
      const res = await send(acme.adminKey, acme.otherProjectId, acmeSession);
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
      expect(await snapshot()).toBe(before);
    });
  } else {
    it('answers 404 to a key bound to another project of the same tenant', async () => {
      const key = await acme.keyWith(['session:read'], acme.otherProjectId);
      const res = await send(key, acme.projectId, acmeSession);
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
    });
  }

  it('answers 404 Session not found for an unknown id of any form and 400 for an absurd one', async () => {
    for (const id of [randomUUID(), 'abc']) {
      const unknown = await send(acme.adminKey, acme.projectId, id);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
    }
    const absurd = await send(acme.adminKey, acme.projectId, 'x'.repeat(129));
    expect(absurd.status).toBe(400);
    expect(absurd.body.error.code).toBe('VALIDATION_ERROR');
  });

  it(`serves the owner with ${call.perm}`, async () => {
    if (call.method !== 'get') return; // delete and reset are exercised in routes.test.ts
    const key = await acme.keyWith([call.perm], call.tenantWide ? acme.projectId : null);
    const res = await send(key, acme.projectId, acmeSession);
    expect(res.status).toBe(200);
  });
});

describe('create and list', () => {
  const create = (key: string | undefined, projectId: string) => api.post(`/api/projects/${projectId}/sessions`, { key, json: { agentId: 'Acme_Agent' } });
  const list = (key: string | undefined, projectId: string) => api.get(`/api/projects/${projectId}/sessions`, { key });

  it('answer 401 without a credential', async () => {
    expect((await create(undefined, acme.projectId)).status).toBe(401);
    expect((await list(undefined, acme.projectId)).status).toBe(401);
  });

  it('answer 403 without session:execute / session:read, creating nothing', async () => {
    const before = await snapshot();
    const readOnly = await acme.keyWith(['session:read']);
    const executeOnly = await acme.keyWith(['session:execute']);
    const created = await create(readOnly, acme.projectId);
    expect(created.status).toBe(403);
    expect(created.body.error.message).toContain("'session:execute'");
    const listed = await list(executeOnly, acme.projectId);
    expect(listed.status).toBe(403);
    expect(listed.body.error.message).toContain("'session:read'");
    expect(await snapshot()).toBe(before);
  });

  it("answer 404 for another tenant's project, creating nothing", async () => {
    const before = await snapshot();
    const created = await api.post(`/api/projects/${globex.projectId}/sessions`, { key: acme.adminKey, json: { agentId: 'Globex_Agent' } });
    expect(created.status).toBe(404);
    expect((await list(acme.adminKey, globex.projectId)).status).toBe(404);
    expect(await snapshot()).toBe(before);
  });

  it("never lists another tenant's or another project's sessions", async () => {
    const res = await list(acme.adminKey, acme.projectId);
    expect(res.status).toBe(200);
    expect(res.body.sessions.map((s: { id: string }) => s.id)).toEqual([acmeSession]);
    const other = await list(acme.adminKey, acme.otherProjectId);
    expect(other.body).toMatchObject({ total: 0, sessions: [] });
  });

  it("does not resolve another tenant's agent", async () => {
    const res = await create(globex.adminKey, globex.projectId);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  });
});

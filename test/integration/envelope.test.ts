// The HTTP error contract: every failure is `{ success: false, error: { code, message } }` with
// the right status, and bad input changes nothing.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client, request } from '../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
});
afterAll(() => stack.close());

const projectCount = () => stack.ctx.models.Project.countDocuments({ tenantId: t.tenantId });

function expectEnvelope(body: unknown, code: string) {
  expect(body).toEqual({ success: false, error: { code, message: expect.any(String) } });
}

it('answers malformed JSON with 400 and creates nothing', async () => {
  const before = await projectCount();
  const res = await api.post('/api/projects', { key: t.adminKey, raw: '{"name": "x",', headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(400);
  expectEnvelope(res.body, 'BAD_REQUEST');
  expect(await projectCount()).toBe(before);
});

it('answers a body of 1 MB + 1 byte with 413', async () => {
  const filler = 'a'.repeat(1024 * 1024 + 1 - '{"name":""}'.length);
  const raw = `{"name":"${filler}"}`;
  expect(Buffer.byteLength(raw)).toBe(1024 * 1024 + 1);
  const res = await api.post('/api/projects', { key: t.adminKey, raw, headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(413);
  expectEnvelope(res.body, 'PAYLOAD_TOO_LARGE');
});

it('accepts a body of exactly 1 MB (validation decides, not the size limit)', async () => {
  const filler = 'a'.repeat(1024 * 1024 - '{"name":""}'.length);
  const res = await api.post('/api/projects', { key: t.adminKey, raw: `{"name":"${filler}"}`, headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(400);
  expectEnvelope(res.body, 'VALIDATION_ERROR');
});

it('answers an unknown route with 404 and a wrong method with 405', async () => {
  const unknown = await api.get('/api/no-such-thing', { key: t.adminKey });
  expect(unknown.status).toBe(404);
  expectEnvelope(unknown.body, 'NOT_FOUND');
  const wrong = await api.put('/api/projects', { key: t.adminKey, json: {} });
  expect(wrong.status).toBe(405);
  expect(wrong.headers.get('allow')).toBe('GET, POST');
  expectEnvelope(wrong.body, 'METHOD_NOT_ALLOWED');
});

it('answers a non-JSON content type with 415 and creates nothing', async () => {
  const before = await projectCount();
  const res = await api.post('/api/projects', { key: t.adminKey, raw: 'name=x', headers: { 'content-type': 'text/plain' } });
  expect(res.status).toBe(415);
  expectEnvelope(res.body, 'UNSUPPORTED_MEDIA_TYPE');
  const form = await api.post('/api/projects', { key: t.adminKey, raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  expect(form.status).toBe(415);
  expect(await projectCount()).toBe(before);
});

it('answers a non-UTF-8 body with 400 and a non-UTF-8 charset with 415', async () => {
  const latin1 = Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]); // {"name":"\xe9"}
  const bad = await api.post('/api/projects', { key: t.adminKey, raw: latin1, headers: { 'content-type': 'application/json' } });
  expect(bad.status).toBe(400);
  expectEnvelope(bad.body, 'BAD_REQUEST');
  const charset = await api.post('/api/projects', { key: t.adminKey, raw: latin1, headers: { 'content-type': 'application/json; charset=latin1' } });
  expect(charset.status).toBe(415);
});

it('refuses text holding the NUL character with 422, wherever it is, and stores nothing', async () => {
  // MongoDB would keep it, PostgreSQL under the dev store cannot: one rule for every route.
  const before = await projectCount();
  const named = await api.post('/api/projects', { key: t.adminKey, json: { name: 'a\u0000b' } });
  expect(named.status).toBe(422);
  expectEnvelope(named.body, 'UNPROCESSABLE_ENTITY');
  expect(named.body.error.message).toContain('body.name');
  const keyed = await api.post(`/api/projects/${t.projectId}/human-tasks`, {
    key: t.adminKey,
    json: { type: 'approval', title: 'ok', context: { 'k\u0000': 1 } },
  });
  expect(keyed.status).toBe(422);
  expect(await projectCount()).toBe(before);
  expect(await stack.ctx.models.HumanTask.countDocuments({ tenantId: t.tenantId })).toBe(0);
  const secret = await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: 'p\u0000', toolName: 'crm', secretKey: 'K', value: 'v', allowedHosts: ['crm.example.com'] } });
  expect(secret.status).toBe(422);
  // A path id holding it names nothing.
  const path = await api.get('/api/projects/x%00y/agents', { key: t.adminKey });
  expect(path.status).toBe(404);
});

it('names the offending field in a validation error', async () => {
  const res = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'x', permissions: ['agent:fly'] } });
  expect(res.status).toBe(400);
  expectEnvelope(res.body, 'VALIDATION_ERROR');
  expect(res.body.error.message).toContain('body.permissions.0');
  const query = await api.get('/api/projects?limit=500', { key: t.adminKey });
  expect(query.status).toBe(400);
  expect(query.body.error.message).toContain('query.limit');
});

it('echoes a sane X-Request-Id and makes one otherwise', async () => {
  const echoed = await request(stack.baseUrl, 'GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
  expect(echoed.headers.get('x-request-id')).toBe('abc-123');
  const made = await request(stack.baseUrl, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
  expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});

it('never puts a stack trace in a body', async () => {
  const res = await api.post('/api/projects', { key: t.adminKey, raw: '{', headers: { 'content-type': 'application/json' } });
  expect(res.text).not.toMatch(/at .*\.(ts|js):\d+/);
});

it('serves the OpenAPI document built from the route schemas, and a rendered reference', async () => {
  const doc = await api.get('/openapi.json');
  expect(doc.status).toBe(200);
  expect(doc.body.openapi).toBe('3.1.0');
  expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/api/projects/{projectId}', '/api/api-keys', '/api/auth/login', '/readyz']));
  const post = doc.body.paths['/api/api-keys'].post;
  expect(post.requestBody.content['application/json'].schema.properties.permissions).toBeDefined();
  expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403']));
  const html = await request(stack.baseUrl, 'GET', '/docs/');
  expect(html.status).toBe(200);
  expect(html.text).toContain('swagger-ui');
});

it('reports liveness and readiness', async () => {
  expect((await api.get('/healthz')).body).toEqual({ status: 'ok' });
  const ready = await api.get('/readyz');
  expect(ready.status).toBe(200);
  expect(ready.body).toMatchObject({ status: 'ready' });
});

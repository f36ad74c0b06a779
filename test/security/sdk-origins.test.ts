// A public widget key works only from the pages it lists: SDK init and config from a missing or
// unlisted Origin are 403 without CORS headers, so neither another site's page nor a script
// outside a browser that leaves Origin out gets a session token or the config with a leaked key.
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(120_000);

const SHOP = 'https://shop.example.com';
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let key: string;

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  const created = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Shop', allowedOrigins: [SHOP] } });
  expect(created.status).toBe(201);
  key = created.body.publicKey.key;
});
afterAll(async () => {
  await stack.close();
});

const refusedOrigins: [string, Record<string, string>][] = [
  ['no Origin', {}],
  ['another site', { origin: 'https://evil.example.net' }],
  ['a look-alike host', { origin: 'https://shop.example.com.evil.net' }],
  ['the listed host over http', { origin: 'http://shop.example.com' }],
  ['the listed host on another port', { origin: 'https://shop.example.com:8443' }],
  ['the opaque origin of a sandboxed frame', { origin: 'null' }],
];

it.each(refusedOrigins)('refuses SDK init from %s with 403 and no CORS headers', async (_label, headers) => {
  const res = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': key, ...headers }, json: { projectId: t.projectId } });
  expect(res.status).toBe(403);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe('FORBIDDEN');
  expect(res.body.token).toBeUndefined();
  expect(res.headers.get('access-control-allow-origin')).toBeNull();
});

it.each(refusedOrigins)('refuses SDK config from %s with 403 and no CORS headers', async (_label, headers) => {
  const res = await api.get(`/api/v1/sdk/config/${t.projectId}`, { headers: { 'x-api-key': key, ...headers } });
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe('FORBIDDEN');
  expect(res.body.config).toBeUndefined();
  expect(res.headers.get('access-control-allow-origin')).toBeNull();
});

it('gives a listed origin its token, with CORS headers for that origin alone', async () => {
  const res = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': key, origin: SHOP }, json: { projectId: t.projectId } });
  expect(res.status).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
  expect(res.headers.get('vary')).toContain('Origin');
});

it('never lets a public key act as an API key on the platform routes', async () => {
  for (const res of [
    await api.get(`/api/projects/${t.projectId}/public-keys`, { headers: { 'x-api-key': key, origin: SHOP } }),
    await api.post('/api/v1/chat/agent', { headers: { 'x-api-key': key, origin: SHOP }, json: { projectId: t.projectId, message: 'hi' } }),
    await api.get(`/api/projects/${t.projectId}/sessions`, { key, headers: { origin: SHOP } }),
  ]) {
    expect(res.status).toBe(401);
  }
});

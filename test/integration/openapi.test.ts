// The OpenAPI document as a reference: every route has an operationId, a summary, its error
// responses and examples, links that point at real operations; and the contract points the
// fuzzer found (bounds, required bodies, statuses, media types) hold over HTTP.
import { featureRoutes } from '../../api/app';
import { type AnyRoute } from '../../api/http/route';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

interface Operation {
  operationId?: string;
  summary?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string }[];
  requestBody?: { required?: boolean; content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { example?: unknown }>; links?: Record<string, { operationId: string; parameters: Record<string, string> }> }>;
}

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let operations: Map<string, Operation>;
const routes: AnyRoute[] = featureRoutes.flat();

const keyOf = (route: AnyRoute) => `${route.method.toUpperCase()} ${route.path.replace(/:([A-Za-z_]\w*)/g, '{$1}')}`;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  const res = await api.get('/openapi.json');
  expect(res.status).toBe(200);
  operations = new Map();
  for (const [path, item] of Object.entries(res.body.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, operation] of Object.entries(item)) operations.set(`${method.toUpperCase()} ${path}`, operation);
  }
});
afterAll(() => stack.close());

/** What a route can answer besides success, from what it declares (not from the generator). */
function requiredErrorStatuses(route: AnyRoute): string[] {
  const statuses = new Set<string>();
  if (route.params || route.query || route.body) statuses.add('400');
  if (route.security === 'platformAdmin') statuses.add('401');
  else if (route.auth !== 'public') statuses.add('401').add('429');
  if (route.auth !== 'public' && route.auth !== 'authenticated') statuses.add('403');
  if (route.path.includes('/:')) statuses.add('404');
  return [...statuses];
}

it('describes the HTTP-async events under webhooks, signed, with their bodies', async () => {
  const res = await api.get('/openapi.json');
  const webhooks = res.body.webhooks as Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> }; parameters: { name: string; in: string }[] } }>;
  expect(Object.keys(webhooks).sort()).toEqual(['agent.media', 'agent.response', 'agent.status']);
  expect(webhooks['agent.response']!.post.requestBody.content['application/json']!.schema.$ref).toBe('#/components/schemas/HttpAsyncAgentResponseEvent');
  expect(webhooks['agent.status']!.post.parameters.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['header:x-abl-signature', 'header:x-abl-timestamp']));
});

describe('every operation of the document', () => {
  it('lists every route once', () => {
    expect(operations.size).toBe(routes.length);
    for (const route of routes) expect(operations.has(keyOf(route))).toBe(true);
  });

  it.each(routes.map((route) => [keyOf(route), route] as const))('%s has an operationId, a summary, its errors and examples', (key, route) => {
    const operation = operations.get(key)!;
    expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
    expect(operation.summary?.trim().length).toBeGreaterThan(10);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(requiredErrorStatuses(route)));
    const successes = Object.entries(operation.responses).filter(([status]) => status.startsWith('2'));
    expect(successes.length).toBeGreaterThan(0);
    for (const [, response] of successes) {
      for (const media of Object.values(response.content ?? {})) expect(media.example).toBeDefined();
    }
    for (const [status, response] of Object.entries(operation.responses)) {
      if (Number(status) >= 400 && status !== '408' && status !== '431') expect(response.content?.['application/json']?.example).toMatchObject({ success: false, error: { code: expect.any(String) } });
    }
    if (operation.requestBody) {
      // In the body's own media type (JSON, or the form a provider's webhook posts).
      expect(Object.values(operation.requestBody.content as Record<string, { example?: unknown }>)[0]?.example).toBeDefined();
    }
  });

  it('has unique operationIds, and links name existing operations and their parameters', () => {
    const byId = new Map([...operations.values()].map((op) => [op.operationId, op]));
    expect(byId.size).toBe(operations.size);
    let links = 0;
    for (const operation of operations.values()) {
      for (const response of Object.values(operation.responses)) {
        for (const link of Object.values(response.links ?? {})) {
          links++;
          const target = byId.get(link.operationId);
          expect(target).toBeDefined();
          const names = (target!.parameters ?? []).map((p) => p.name);
          for (const parameter of Object.keys(link.parameters)) expect(names).toContain(parameter);
        }
      }
    }
    // Projects, agents, versions, tool files, keys, credentials, sessions and chat turns link onwards.
    expect(links).toBeGreaterThanOrEqual(30);
  });

  it('documents the requirement for a platform token on tenant management', () => {
    expect(operations.get('POST /api/admin/tenants')!.security).toEqual([{ platformAdmin: [] }]);
    expect(operations.get('GET /healthz')!.security).toEqual([]);
  });
});

describe('the contract the fuzzer checks', () => {
  it('documents /chat/stream as text/event-stream', () => {
    expect(Object.keys(operations.get('POST /api/v1/chat/stream')!.responses['200']!.content!)).toEqual(['text/event-stream']);
  });

  it('documents both 200 and 201 where a route creates or replaces', () => {
    for (const key of [
      'PUT /api/projects/{projectId}/tools/{name}',
      'PUT /api/projects/{projectId}/llm-credentials/{provider}',
      'POST /api/projects/{projectId}/agents/{agentName}/versions',
    ]) {
      expect(Object.keys(operations.get(key)!.responses)).toEqual(expect.arrayContaining(['200', '201']));
    }
    expect(Object.keys(operations.get('GET /api/agents/{name}')!.responses)).toContain('409');
  });

  it('answers 201 then 200 for PUT llm-credentials, as documented', async () => {
    const put = () => api.put(`/api/projects/${t.projectId}/llm-credentials/openai`, { key: t.adminKey, json: { apiKey: 'sk-test' } });
    expect((await put()).status).toBe(201);
    expect((await put()).status).toBe(200);
  });

  it('requires the body of PUT llm-settings (a missing body is a 400), and takes none on POST validate', async () => {
    const settings = await api.put(`/api/projects/${t.projectId}/llm-settings`, { key: t.adminKey });
    expect(settings.status).toBe(400);
    expect(settings.body.error).toEqual({ code: 'VALIDATION_ERROR', message: 'body: is required (a JSON object)' });
    const empty = await api.put(`/api/projects/${t.projectId}/llm-settings`, { key: t.adminKey, json: {} });
    expect(empty.status).toBe(200);
    expect(operations.get('PUT /api/projects/{projectId}/llm-settings')!.requestBody!.required).toBe(true);
    expect(operations.get('POST /api/projects/{projectId}/agents/{agentName}/validate')!.requestBody!.required).toBe(false);
  });

  it('takes any offset up to the documented maximum, and refuses what the document refuses', async () => {
    const list = (offset: string) => api.get(`/api/projects?offset=${offset}`, { key: t.adminKey });
    const huge = await list(String(Number.MAX_SAFE_INTEGER));
    expect(huge.status).toBe(200);
    expect(huge.body.projects).toEqual([]);
    for (const bad of [String(Number.MAX_SAFE_INTEGER + 2), '', '1e3', '0x10', '-1', '1.5']) {
      const res = await list(encodeURIComponent(bad));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain('query.offset');
    }
  });

  it('states the e-mail, date-time and model-id rules as patterns', async () => {
    const body = (key: string) => operations.get(key)!.requestBody!.content['application/json'] as unknown as { schema: { $ref?: string; properties?: Record<string, { pattern?: string }> } };
    expect(body('POST /api/auth/login').schema.properties!.email!.pattern).toBeDefined();
    expect(body('POST /api/api-keys').schema.properties!.expiresAt!.pattern).toBeDefined();
    const res = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'k', permissions: ['agent:read'], expiresAt: '' } });
    expect(res.status).toBe(400);
  });

  it('states that names must not be blank (a pattern), and refuses a blank one as documented', async () => {
    const schema = (operations.get('POST /api/projects')!.requestBody!.content['application/json'] as unknown as { schema: { properties: Record<string, { pattern?: string; minLength?: number }> } }).schema;
    expect(schema.properties.name).toMatchObject({ minLength: 1, pattern: expect.any(String) });
    expect(new RegExp(schema.properties.name!.pattern!).test(' ')).toBe(false);
    const blank = await api.post('/api/api-keys', { key: t.adminKey, json: { name: ' ', permissions: ['agent:read'] } });
    expect(blank.status).toBe(400);
    expect(blank.body.error.message).toContain('body.name: must not be blank');
    const padded = await api.post('/api/api-keys', { key: t.adminKey, json: { name: '  widget ', permissions: ['agent:read'] } });
    expect(padded.status).toBe(201);
    expect(padded.body.apiKey.name).toBe('widget');
  });

  it('answers a well-formed expiry already past with 422, as documented, not 400', async () => {
    const res = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'k', permissions: ['agent:read'], expiresAt: '1887-12-31T22:49:35Z' } });
    expect(res.status).toBe(422);
    expect(res.body.error).toEqual({ code: 'UNPROCESSABLE_ENTITY', message: 'body.expiresAt: must be in the future' });
    expect(Object.keys(operations.get('POST /api/api-keys')!.responses)).toEqual(expect.arrayContaining(['404', '422']));
  });
});

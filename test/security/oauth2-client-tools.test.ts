// An `auth: oauth2_client` tool is never called without its credential: the tool activity runs
// the OAuth 2.0 client-credentials grant against a real token endpoint (RFC 6749 §4.4: a form
// POST with HTTP Basic client authentication, a JSON token answer), sends the access token as a
// Bearer token, reuses it until it expires, and fails the call (no request to the API) when the
// exchange fails or a secret may not go to the token URL. A tool whose auth_config cannot make
// the exchange does not compile (E418). Neither the token nor the client secret reaches a trace
// or workflow history.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { chatOnce, publishAgent } from '../support/agents';
import { flushProjection } from '../support/projection';
import { payloadText, sessionHistory } from '../support/workflow-history';

const CLIENT_ID = 'payments-client';
const CLIENT_SECRET = 'cs-9f3b27d1e6a04c58';

let stack: TestStack;
let api: ReturnType<typeof client>;
let tokenServer: Server;
let apiServer: Server;
let tokenOrigin: string;
let apiOrigin: string;
/** Token requests: the form fields and the Authorization header. */
const tokenRequests: { form: URLSearchParams; authorization: string | undefined; contentType: string | undefined }[] = [];
const apiRequests: IncomingHttpHeaders[] = [];
const issued: string[] = [];

beforeAll(async () => {
  tokenServer = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      tokenRequests.push({ form, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
      const expected = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'no-store');
      if (req.method !== 'POST' || req.url !== '/oauth/token' || form.get('grant_type') !== 'client_credentials') {
        res.writeHead(400).end(JSON.stringify({ error: 'unsupported_grant_type' }));
        return;
      }
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'www-authenticate': 'Basic' }).end(JSON.stringify({ error: 'invalid_client', error_description: `bad credentials ${req.headers.authorization}` }));
        return;
      }
      const token = `at-${issued.length + 1}-5c1e88b0`;
      issued.push(token);
      res.writeHead(200).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600, scope: form.get('scope') }));
    });
  });
  apiServer = createServer((req, res) => {
    apiRequests.push(req.headers);
    req.resume();
    const ok = issued.some((t) => req.headers.authorization === `Bearer ${t}`);
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    // Carelessly echoes the credential it was sent.
    res.end(JSON.stringify(ok ? { status: 'refunded', seen: req.headers.authorization } : { error: 'unauthorized' }));
  });
  await new Promise<void>((r) => tokenServer.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => apiServer.listen(0, '127.0.0.1', r));
  tokenOrigin = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}`;
  apiOrigin = `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [tokenOrigin, apiOrigin] } });
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
  for (const s of [tokenServer, apiServer]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const agent = (authConfig: string) => `AGENT: Payments
GOAL: "Refund charges."
TOOLS:
  refund() -> {status: string, seen: string}
    type: http
    endpoint: "${apiOrigin}/refunds"
    method: POST
    auth: oauth2_client
    auth_config:
${authConfig}
FLOW:
  steps: [go]
  go:
    REASONING: false
    CALL: refund
    AS: result
    ON_SUCCESS:
      RESPOND: "Refund {{result.status}} (seen {{result.seen}})"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "The refund failed."
      THEN: COMPLETE
`;

const fullConfig = () =>
  [`      token_url: "${tokenOrigin}/oauth/token"`, '      client_id: "{{secrets.PAY_CLIENT_ID}}"', '      client_secret: "{{secrets.PAY_CLIENT_SECRET}}"', '      scope: "refunds"'].join('\n');

async function storeSecrets(t: SeededTenant, secret: string, hosts: string[]) {
  for (const [secretKey, value] of [
    ['PAY_CLIENT_ID', CLIENT_ID],
    ['PAY_CLIENT_SECRET', secret],
  ]) {
    const res = await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: t.projectId, toolName: 'refund', secretKey, value, allowedHosts: hosts } });
    expect(res.status).toBe(201);
  }
}

const ask = (t: SeededTenant) => chatOnce(api, t, 'Payments', 'refund it');

it('does not compile a tool whose auth_config cannot make the exchange (E418), so no version of it runs', async () => {
  const t = await seedTenant(stack.ctx);
  const created = await api.post(`/api/projects/${t.projectId}/agents`, { key: t.adminKey, json: { name: 'Payments', dslContent: agent('      scope: "refunds"') } });
  const version = await api.post(`/api/projects/${t.projectId}/agents/Payments/versions`, { key: t.adminKey, json: {} });
  expect(version.status).toBeGreaterThanOrEqual(400);
  expect(version.status).toBeLessThan(500);
  const said = JSON.stringify(created.body) + version.text;
  expect(said).toContain('E418');
  expect(said).toContain('uses auth: oauth2_client but its auth_config has no token_url');
  expect(await stack.ctx.models.AgentVersion.countDocuments({ tenantId: t.tenantId })).toBe(0);
});

it('exchanges the client credentials for a token, sends it as Bearer, reuses it until it expires, and records neither', async () => {
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Payments', agent(fullConfig()));
  // The client credentials go to the token endpoint, and the token they obtain to the API: both hosts are listed.
  await storeSecrets(t, CLIENT_SECRET, [new URL(tokenOrigin).host, new URL(apiOrigin).host]);
  const tokensBefore = tokenRequests.length;
  const apiBefore = apiRequests.length;

  const first = await ask(t);
  expect(first.response).toBe('Refund refunded (seen Bearer [secret])');
  const second = await ask(t);
  expect(second.response).toBe('Refund refunded (seen Bearer [secret])');

  // One exchange for both calls, in the form RFC 6749 §4.4.2 gives.
  const exchanges = tokenRequests.slice(tokensBefore);
  expect(exchanges).toHaveLength(1);
  expect(exchanges[0]!.contentType).toBe('application/x-www-form-urlencoded');
  expect(Object.fromEntries(exchanges[0]!.form)).toEqual({ grant_type: 'client_credentials', scope: 'refunds' });
  const token = issued.at(-1)!;
  expect(apiRequests.slice(apiBefore).map((h) => h.authorization)).toEqual([`Bearer ${token}`, `Bearer ${token}`]);

  for (const res of [first, second]) {
    await flushProjection(stack.ctx, res.sessionId);
    const recorded = [
      JSON.stringify(res),
      JSON.stringify(await stack.ctx.models.TraceEvent.find({ tenantId: t.tenantId, sessionId: res.sessionId }).lean()),
      payloadText(await sessionHistory(stack, res.sessionId)),
    ].join('\n');
    expect(recorded).not.toContain(token);
    expect(recorded).not.toContain(CLIENT_SECRET);
  }
});

it('fails the call, without calling the API, when the token endpoint refuses the client', async () => {
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Payments', agent(fullConfig()));
  await storeSecrets(t, 'cs-wrong-00000000', [new URL(tokenOrigin).host, new URL(apiOrigin).host]);
  const apiBefore = apiRequests.length;
  const res = await ask(t);
  expect(res.response).toBe('The refund failed.');
  expect(apiRequests.length).toBe(apiBefore);
  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect((result?.data.error as { message: string }).message).toBe('Tool refund: OAuth2 client credentials: the token endpoint refused the request (HTTP 401, invalid_client)');
  expect(JSON.stringify(res)).not.toContain('cs-wrong-00000000');
});

/** With the secrets allowed only to `allowedOrigin`'s host, the call fails naming `refusedOrigin`'s host, and neither server gets a request. */
async function expectRefusedBeforeAnyRequest(allowedOrigin: string, refusedOrigin: string): Promise<void> {
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Payments', agent(fullConfig()));
  await storeSecrets(t, CLIENT_SECRET, [new URL(allowedOrigin).host]);
  const tokensBefore = tokenRequests.length;
  const apiBefore = apiRequests.length;
  const res = await ask(t);
  expect(res.response).toBe('The refund failed.');
  expect(tokenRequests.length).toBe(tokensBefore);
  expect(apiRequests.length).toBe(apiBefore);
  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect((result?.data.error as { message: string }).message).toContain(`may not be sent to ${new URL(refusedOrigin).host}`);
}

it('does not send the client secret to a token URL its hosts do not list', async () => {
  await expectRefusedBeforeAnyRequest(apiOrigin, tokenOrigin);
});

it('asks for no token when the secrets may not go to the API that would receive it', async () => {
  await expectRefusedBeforeAnyRequest(tokenOrigin, apiOrigin);
});

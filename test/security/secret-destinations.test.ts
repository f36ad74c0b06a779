// A tool secret names the hosts it may be sent to: someone who can edit an agent cannot point a
// tool at their own server and receive a secret stored for another. On the real stack: the secret
// reaches its listed host, a tool aimed elsewhere fails before any request with a clear tool_error,
// a secret stored without a list is sent nowhere, and the list is required, checked, shown and
// changed (without re-sending the value) through /api/tool-secrets.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { chatOnce, publishAgent } from '../support/agents';

const TOKEN = 'billing-token-6f1d2c9a';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let legit: Server;
let attacker: Server;
let legitUrl: string;
let attackerUrl: string;
const legitGot: IncomingHttpHeaders[] = [];
const attackerGot: IncomingHttpHeaders[] = [];

const hostPort = (url: string) => new URL(url).host;

function recorder(into: IncomingHttpHeaders[]): Server {
  return createServer((req, res) => {
    into.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'paid' }));
  });
}

const agent = (name: string, url: string) => `AGENT: ${name}
GOAL: "Check an invoice."
TOOLS:
  check_invoice() -> {status: string}
    type: http
    endpoint: "${url}/invoices/7"
    method: GET
    auth: bearer
    auth_config:
      token: "{{secrets.BILLING_TOKEN}}"
FLOW:
  steps: [check]
  check:
    REASONING: false
    CALL: check_invoice
    AS: invoice
    ON_SUCCESS:
      RESPOND: "Invoice is {{invoice.status}}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "I could not check the invoice."
      THEN: COMPLETE
`;

beforeAll(async () => {
  legit = recorder(legitGot);
  attacker = recorder(attackerGot);
  await new Promise<void>((r) => legit.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
  legitUrl = `http://127.0.0.1:${(legit.address() as AddressInfo).port}`;
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  // Both are reachable as far as the network rules go: only the secret's own list tells them apart.
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [legitUrl, attackerUrl] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Billing_Agent', agent('Billing_Agent', legitUrl));
  await publishAgent(api, t, 'Exfil_Agent', agent('Exfil_Agent', attackerUrl));
});
afterAll(async () => {
  await stack.close();
  for (const s of [legit, attacker]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const ask = (agentId: string) => chatOnce(api, t, agentId, 'is my invoice paid?');

const secretsPath = '/api/tool-secrets';

describe('a secret goes only to its hosts', () => {
  let secretId: string;

  beforeAll(async () => {
    const created = await api.post(secretsPath, {
      key: t.adminKey,
      json: { projectId: t.projectId, toolName: '*', secretKey: 'BILLING_TOKEN', value: TOKEN, allowedHosts: [hostPort(legitUrl), 'billing.example.com'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.secret.allowedHosts).toEqual([hostPort(legitUrl), 'billing.example.com']);
    secretId = created.body.secret.id;
  });

  it('is sent to a listed host', async () => {
    const res = await ask('Billing_Agent');
    expect(res.response).toBe('Invoice is paid');
    expect(legitGot.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('is not sent to any other host: the call fails before a request, with a tool_error naming the secret and the destination', async () => {
    const before = attackerGot.length;
    const res = await ask('Exfil_Agent');
    expect(res.response).toBe('I could not check the invoice.');
    expect(attackerGot.length).toBe(before);
    const result = res.traceEvents.find((e) => e.type === 'tool_result');
    expect(result?.data).toMatchObject({
      tool: 'check_invoice',
      success: false,
      error: { kind: 'tool_error', message: expect.stringContaining(`secret "BILLING_TOKEN" may not be sent to ${hostPort(attackerUrl)}`) },
    });
    expect(res.text).not.toContain(TOKEN);
  });

  it('follows a change of its hosts at the next call, without the value being sent again, and audits it', async () => {
    const changed = await api.put(`${secretsPath}/${secretId}`, { key: t.adminKey, json: { allowedHosts: [hostPort(attackerUrl)] } });
    expect(changed.status).toBe(200);
    // The value did not change, so neither did its version.
    expect(changed.body.secret).toMatchObject({ id: secretId, version: 1, allowedHosts: [hostPort(attackerUrl)] });
    expect((await ask('Exfil_Agent')).response).toBe('Invoice is paid');
    expect(attackerGot.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
    expect((await ask('Billing_Agent')).response).toBe('I could not check the invoice.');

    const listed = await api.get(`${secretsPath}?projectId=${t.projectId}`, { key: t.adminKey });
    expect(listed.body.secrets).toEqual([expect.objectContaining({ id: secretId, allowedHosts: [hostPort(attackerUrl)] })]);
    const audit = await api.get(`/api/projects/${t.projectId}/tool-secrets/audit?secretId=${secretId}`, { key: t.adminKey });
    expect(audit.body.records[0]).toMatchObject({ action: 'update', version: 1, allowedHosts: [hostPort(attackerUrl)] });
    // Put back for the other tests.
    expect((await api.put(`${secretsPath}/${secretId}`, { key: t.adminKey, json: { allowedHosts: [hostPort(legitUrl)] } })).status).toBe(200);
  });

  it('a secret stored before secrets named their hosts is sent nowhere, with a message saying how to fix it', async () => {
    await stack.ctx.models.ToolSecret.collection.updateOne({ _id: secretId as never }, { $unset: { allowedHosts: '' } });
    const before = legitGot.length;
    const res = await ask('Billing_Agent');
    expect(res.response).toBe('I could not check the invoice.');
    expect(legitGot.length).toBe(before);
    const result = res.traceEvents.find((e) => e.type === 'tool_result');
    expect((result?.data.error as { message: string }).message).toContain(`secret "BILLING_TOKEN" names no hosts it may be sent to; set them with PUT /api/tool-secrets/${secretId}`);
    const listed = await api.get(`${secretsPath}?projectId=${t.projectId}`, { key: t.adminKey });
    expect(listed.body.secrets[0].allowedHosts).toEqual([]);
  });
});

describe('the list on create and update', () => {
  const base = { toolName: 'check_invoice', secretKey: 'OTHER', value: 'other-value-1234' };

  it('is required on create, and each entry must be a host or host:port', async () => {
    const cases: unknown[] = [
      undefined,
      [],
      ['https://billing.example.com'],
      ['billing.example.com/v2'],
      ['*.example.com'],
      ['user@billing.example.com'],
      ['billing.example.com:0'],
      ['billing.example.com:70000'],
      ['bill ing.example.com'],
      ['[2001:db8::1]:443'],
      [''],
    ];
    for (const allowedHosts of cases) {
      const res = await api.post(secretsPath, { key: t.adminKey, json: { projectId: t.projectId, ...base, ...(allowedHosts === undefined ? {} : { allowedHosts }) } });
      expect([JSON.stringify(allowedHosts), res.status, res.body.error?.code]).toEqual([JSON.stringify(allowedHosts), 400, 'VALIDATION_ERROR']);
      expect(res.body.error.message).toContain('body.allowedHosts');
    }
    expect(await stack.ctx.models.ToolSecret.countDocuments({ tenantId: t.tenantId, secretKey: 'OTHER' })).toBe(0);
  });

  it('is stored in canonical form (lower case, no trailing dot, repeats once)', async () => {
    const res = await api.post(secretsPath, {
      key: t.adminKey,
      json: { projectId: t.projectId, ...base, allowedHosts: ['Billing.Example.COM', 'billing.example.com.', 'api.example.com:8443', '203.0.113.7'] },
    });
    expect(res.status).toBe(201);
    expect(res.body.secret.allowedHosts).toEqual(['billing.example.com', 'api.example.com:8443', '203.0.113.7']);
  });

  it('refuses an update with nothing to change, or a bad list, and changes nothing', async () => {
    const row = await stack.ctx.models.ToolSecret.findOne({ tenantId: t.tenantId, secretKey: 'OTHER' }).lean();
    for (const json of [{}, { allowedHosts: [] }, { allowedHosts: ['http://x.example.com'] }]) {
      const res = await api.put(`${secretsPath}/${row!._id}`, { key: t.adminKey, json });
      expect([JSON.stringify(json), res.status, res.body.error?.code]).toEqual([JSON.stringify(json), 400, 'VALIDATION_ERROR']);
    }
    const after = await stack.ctx.models.ToolSecret.findOne({ _id: row!._id }).lean();
    expect(after!.allowedHosts).toEqual(row!.allowedHosts);
    expect(after!.version).toBe(1);
  });
});

// An `auth: oauth2_client` tool is never called without its credential: the runtime does not
// perform the client-credentials exchange, so such a tool does not compile (E418) and no version
// of it can be saved, and therefore no session ever calls its endpoint with no auth.
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(() => stack.close());

const agent = `AGENT: Payments
GOAL: "Refund charges."
TOOLS:
  refund(charge_id: string) -> {status: string}
    type: http
    endpoint: "https://pay.example.com/refunds"
    method: POST
    auth: oauth2_client
    auth_config:
      token_url: "https://auth.example.com/oauth/token"
      client_id: "{{secrets.PAY_CLIENT_ID}}"
      client_secret: "{{secrets.PAY_CLIENT_SECRET}}"
`;

it('refuses to save a version of an agent with an oauth2_client tool, with diagnostic E418 naming the tool', async () => {
  const created = await api.post(`/api/projects/${t.projectId}/agents`, { key: t.adminKey, json: { name: 'Payments', dslContent: agent } });
  // The draft may be stored with its diagnostics; what runs is a saved version.
  const diagnostics = JSON.stringify(created.body);
  const version = await api.post(`/api/projects/${t.projectId}/agents/Payments/versions`, { key: t.adminKey, json: {} });
  expect(version.status).not.toBe(201);
  expect(version.status).toBeGreaterThanOrEqual(400);
  expect(version.status).toBeLessThan(500);
  expect(diagnostics + version.text).toContain('E418');
  expect(diagnostics + version.text).toContain('Tool \\"refund\\" uses auth: oauth2_client');
  expect(await stack.ctx.models.AgentVersion.countDocuments({ tenantId: t.tenantId })).toBe(0);
});

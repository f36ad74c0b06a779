// pii_access / context_access through a real turn: a fake tool server records what it receives.
// With `pii_access: masked` and `context_access: [locale]` it gets the e-mail in a partial form,
// the sensitive ID as [sensitive] and only the locale of the message metadata; a tool without
// them gets everything. The session records patch tool-access-v1 and replays with today's code.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(60_000);

let tools: Server;
let toolsUrl: string;
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const received: { path: string; headers: IncomingHttpHeaders; body: unknown }[] = [];

const agent = (name: string, access: string) => `AGENT: ${name}
GOAL: "Check an identity."
TOOLS:
  check_id(id: string, contact: string) -> {ok: boolean}
    type: http
    endpoint: "${toolsUrl}/${name}"
    method: POST
    headers:
      X-Locale: "{{message_metadata.locale}}"
      X-Tier: "{{message_metadata.tier}}"
${access}
FLOW:
  steps: [ask, check]
  ask:
    REASONING: false
    GATHER:
      - contact: required
        prompt: "How do we reach you?"
      - id_number: required
        prompt: "Your ID number?"
        validate: pattern(^[A-Z0-9]{6,12}$)
        sensitive: true
    THEN: check
  check:
    REASONING: false
    CALL: check_id
      WITH:
        id: id_number
        contact: "{{contact}} (id {{id_number}})"
      AS: result
    ON_SUCCESS:
      RESPOND: "Checked."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Could not check."
      THEN: COMPLETE
`;

beforeAll(async () => {
  tools = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: raw ? JSON.parse(raw) : null });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolsUrl] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Limited', agent('Limited', '    pii_access: masked\n    context_access: [locale]'));
  await publishAgent(api, t, 'Open', agent('Open', ''));
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

type Trace = { type: string; data: Record<string, unknown> };

async function conversation(agentId: string) {
  const metadata = { locale: 'fr', tier: 'gold' };
  let sessionId: string | undefined;
  let last: { sessionId: string; response: string; traceEvents: Trace[] } | undefined;
  for (const message of ['ann@example.com', 'AB123456']) {
    const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message, metadata, ...(sessionId ? { sessionId } : {}) } });
    expect(res.status).toBe(200);
    last = res.body;
    sessionId = last!.sessionId;
  }
  expect(last!.response).toBe('Checked.');
  return { ...last!, call: received.filter((r) => r.path === `/${agentId}`) };
}

it('sends a limited tool masked arguments and only the listed metadata, and the run replays', async () => {
  const { call, traceEvents, sessionId } = await conversation('Limited');
  expect(call).toHaveLength(1);
  expect(call[0]!.body).toEqual({ id: '[sensitive]', contact: 'a***@example.com (id [sensitive])' });
  expect(call[0]!.headers['x-locale']).toBe('fr');
  expect(call[0]!.headers['x-tier']).toBe('');
  // The trace shows what the tool received.
  const input = traceEvents.find((e) => e.type === 'tool_call')?.data.input;
  expect(input).toEqual({ id: '[sensitive]', contact: 'a***@example.com (id [sensitive])' });

  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('tool-access-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

it('sends a tool without limits everything, and records no marker', async () => {
  const { call, sessionId } = await conversation('Open');
  expect(call).toHaveLength(1);
  expect(call[0]!.body).toEqual({ id: 'AB123456', contact: 'ann@example.com (id AB123456)' });
  expect(call[0]!.headers['x-tier']).toBe('gold');
  expect(patchIdsIn(await sessionHistory(stack, sessionId))).not.toContain('tool-access-v1');
});

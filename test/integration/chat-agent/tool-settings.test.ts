// HTTP tool settings through real turns against a local tool server: `retry` gives exactly
// retry + 1 attempts (0 means one), `circuit_breaker` stops sending after `threshold` failures in
// a row and fails fast with a tool_error, `rate_limit` refuses a call with no free slot in time,
// and the SecretRef vault carries a producer's token to its consumer's header without the model,
// the reply, the trace or the workflow history ever holding it, and a token a stored secret
// obtained goes only where that secret may.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent } from '../../support/agents';
import { payloadText, sessionHistory } from '../../support/workflow-history';

const TOKEN = 'vault-token-5f1c9a7e2b';
const LOGIN_KEY = 'stored-login-key-9d2e4c';
const MINTED = 'minted-by-secret-3b7f1a';

let tools: Server;
let toolsUrl: string;
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const hits = new Map<string, number>();
const authSeen: string[] = [];

/** An agent whose one step calls `tool` and says how it went (the tool's error message on failure). */
const oneCall = (name: string, tool: string) => `AGENT: ${name}
GOAL: "Call a tool."
TOOLS:
${tool}
FLOW:
  steps: [go]
  go:
    REASONING: false
    CALL: probe
    AS: r
    ON_SUCCESS:
      RESPOND: "ok"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "failed"
      THEN: COMPLETE
`;

const probe = (path: string, settings: string) => `  probe() -> object
    type: http
    endpoint: "${toolsUrl}/${path}"
${settings}`;

beforeAll(async () => {
  tools = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!.slice(1);
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('fail')) {
      res.writeHead(503, { 'content-type': 'application/json' });
      return res.end('{"error":"down"}');
    }
    if (path === 'login') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ data: { token: TOKEN, user: 'ann' } }));
    }
    if (path === 'mint') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ data: { token: req.headers['x-key'] === LOGIN_KEY ? MINTED : 'no-key' } }));
    }
    if (path === 'profile') authSeen.push(req.headers.authorization ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ name: 'Ann', echoed: req.headers.authorization ?? '' }));
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolsUrl] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'No_Retry', oneCall('No_Retry', probe('fail-none', '    retry: 0')));
  await publishAgent(api, t, 'Two_Retries', oneCall('Two_Retries', probe('fail-two', '    retry: 2\n    retry_delay: 10ms')));
  await publishAgent(api, t, 'Policy_Retries', oneCall('Policy_Retries', probe('fail-policy', '    retry_policy:\n      strategy: exponential\n      initial_delay_ms: 5\n      max_retries: 1\n      jitter: true')));
  await publishAgent(api, t, 'Breaker', oneCall('Breaker', probe('fail-breaker', '    circuit_breaker:\n      threshold: 2\n      resetMs: 600000')));
  // One call per 100 s: a second call within the window cannot get a slot within its 200 ms timeout.
  await publishAgent(api, t, 'Limited', oneCall('Limited', probe('limited', '    timeout: 200\n    rate_limit: 0.01')));
  await publishAgent(api, t, 'Vault_Agent', `AGENT: Vault_Agent
GOAL: "Sign in, then read the profile twice."
TOOLS:
  login() -> object
    type: http
    endpoint: "${toolsUrl}/login"
    RESULT_SECRETS:
      - data.token -> session_token (consumers: [get_profile], ttl: 300, single_use: true)
  get_profile() -> object
    type: http
    endpoint: "${toolsUrl}/profile"
    SECRET_ACCESS:
      READ: [session_token]
    headers:
      Authorization: "Bearer {{_secret.session_token}}"
FLOW:
  steps: [sign_in, first, second]
  sign_in:
    REASONING: false
    CALL: login
    AS: auth
    ON_SUCCESS:
      RESPOND: "signed in as {{auth.data.user}} with {{auth.data.token}}."
      THEN: first
  first:
    REASONING: false
    CALL: get_profile
    AS: p
    ON_SUCCESS:
      RESPOND: "first saw {{p.echoed}}."
      THEN: second
  second:
    REASONING: false
    CALL: get_profile
    AS: q
    ON_SUCCESS:
      RESPOND: "second saw [{{q.echoed}}]."
      THEN: COMPLETE
`);
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

/** The error of the turn's failed tool call, as the trace shows it. */
function toolError(turn: Awaited<ReturnType<typeof chatOnce>>): string {
  const failed = turn.traceEvents.find((e) => e.type === 'tool_result' && (e.data as { success?: boolean }).success === false);
  return JSON.stringify((failed?.data as { error?: unknown } | undefined)?.error ?? null);
}

it('tries a failing call exactly retry + 1 times: once with retry 0, three times with retry 2, twice with retry_policy.max_retries 1', async () => {
  expect((await chatOnce(api, t, 'No_Retry', 'go')).response).toBe('failed');
  expect(hits.get('fail-none')).toBe(1);
  expect((await chatOnce(api, t, 'Two_Retries', 'go')).response).toBe('failed');
  expect(hits.get('fail-two')).toBe(3);
  expect((await chatOnce(api, t, 'Policy_Retries', 'go')).response).toBe('failed');
  expect(hits.get('fail-policy')).toBe(2);
});

it('opens the circuit after threshold failures in a row: the next call is not sent and fails as a tool_error', async () => {
  await chatOnce(api, t, 'Breaker', 'go');
  await chatOnce(api, t, 'Breaker', 'go');
  expect(hits.get('fail-breaker')).toBe(2);
  const third = await chatOnce(api, t, 'Breaker', 'go');
  expect(third.response).toBe('failed');
  expect(hits.get('fail-breaker')).toBe(2);
  expect(toolError(third)).toMatch(/circuit breaker is open after 2 failures in a row/);
});

it('refuses a call over its rate_limit with a clear tool_error instead of sending it', async () => {
  // Windows are aligned to the clock: three calls in a row cross at most one window boundary, so
  // at least one of the later two finds the window used.
  const turns = [await chatOnce(api, t, 'Limited', 'go'), await chatOnce(api, t, 'Limited', 'go'), await chatOnce(api, t, 'Limited', 'go')];
  const refused = turns.filter((x) => x.response === 'failed');
  expect(refused.length).toBeGreaterThanOrEqual(1);
  expect(hits.get('limited')).toBe(3 - refused.length);
  for (const r of refused) expect(toolError(r)).toMatch(/over its rate_limit of 0.01 calls per second/);
});

it("sends the producer's token to its consumer's header once, and keeps it out of the reply, the trace and history", async () => {
  const turn = await chatOnce(api, t, 'Vault_Agent', 'hi');
  // The consumer got the token; single_use: the second read found nothing (fail-closed, empty).
  expect(authSeen).toEqual([`Bearer ${TOKEN}`, 'Bearer']);
  expect(turn.response).toContain('signed in as ann with [secret].');
  expect(turn.response).toContain('first saw Bearer [secret].');
  expect(turn.response).toContain('second saw [Bearer].');
  expect(turn.text).not.toContain(TOKEN);
  expect(payloadText(await sessionHistory(stack, turn.sessionId))).not.toContain(TOKEN);
});

it("sends a token a stored secret obtained only where that secret may go, refused elsewhere before anything is sent", async () => {
  const port = new URL(toolsUrl).port;
  // The secret may go to 127.0.0.1 only; localhost is the same server under a name it does not list.
  const stored = await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: t.projectId, toolName: 'mint', secretKey: 'LOGIN_KEY', value: LOGIN_KEY, allowedHosts: [`127.0.0.1:${port}`] } });
  expect(stored.status).toBe(201);
  const consumer = (name: string, base: string) => `  ${name}() -> object
    type: http
    endpoint: "${base}/profile"
    SECRET_ACCESS:
      READ: [minted]
    headers:
      Authorization: "Bearer {{_secret.minted}}"`;
  await publishAgent(api, t, 'Minting_Agent', `AGENT: Minting_Agent
GOAL: "Mint a token, then use it."
TOOLS:
  mint() -> object
    type: http
    endpoint: "${toolsUrl}/mint"
    headers:
      X-Key: "{{secrets.LOGIN_KEY}}"
    RESULT_SECRETS:
      - data.token -> minted
${consumer('elsewhere', `http://localhost:${port}`)}
${consumer('at_home', toolsUrl)}
FLOW:
  steps: [mint_it, leak, use]
  mint_it:
    REASONING: false
    CALL: mint
    ON_SUCCESS:
      THEN: leak
  leak:
    REASONING: false
    CALL: elsewhere
    ON_SUCCESS:
      RESPOND: "sent elsewhere."
      THEN: use
    ON_FAIL:
      RESPOND: "not sent elsewhere."
      THEN: use
  use:
    REASONING: false
    CALL: at_home
    AS: p
    ON_SUCCESS:
      RESPOND: "home saw {{p.echoed}}."
      THEN: COMPLETE
`);
  const before = authSeen.length;
  const turn = await chatOnce(api, t, 'Minting_Agent', 'go');
  expect(turn.response).toContain('not sent elsewhere.');
  expect(turn.response).toContain('home saw Bearer [secret].');
  // The only request that carried the token went where the secret may.
  expect(authSeen.slice(before)).toEqual([`Bearer ${MINTED}`]);
  const error = toolError(turn);
  expect(error).toContain('vault value \\"minted\\" was produced by a call that carried secret \\"LOGIN_KEY\\"');
  expect(error).toContain(`not to localhost:${port}`);
  expect(error).toContain(`PUT /api/tool-secrets/${stored.body.secret.id}`);
  expect(turn.text).not.toContain(MINTED);
});

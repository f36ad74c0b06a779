// Agentic-app sessions on the real stack: find-or-create by identity priority, list, detail with
// traces and observations, terminate (twice), runs answered synchronously, as SSE and async with
// a signed callback delivered to a receiver that fails twice first; tenancy, permissions and
// bad bodies in the error envelope.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { ChannelKey, ProjectIdKey, SessionIdKey, TenantIdKey } from '../../../workflows/search-attributes';
import { ZAppSessionDetailResponse, ZCreateAppSessionResponse, ZExecuteRunResponse, ZListAppSessionsResponse, ZTerminateResponse } from '../../../api/agentic-apps/schemas';
import { publishAgent } from '../../support/agents';
import { closeInterruptedRuns, INTERRUPTED_RUN_ERROR, staleRunAgeMs } from '../../../core/agentic-apps/stale-runs';
import { eventually } from '../../support/eventually';
import { closedRunError, reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let receiver: Server;
let receiverOrigin: string;
/** What the callback receiver got, in order; it answers 500 to the first `failFirst` requests. */
const deliveries: { headers: IncomingHttpHeaders; body: string }[] = [];
let failFirst = 0;
/** Requests of the OAuth tool (path /mail). */
const mailRequests: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/mail') {
        mailRequests.push(req.headers);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: '3 new' }));
        return;
      }
      deliveries.push({ headers: req.headers, body });
      res.writeHead(deliveries.length <= failFirst ? 500 : 200);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverOrigin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [receiverOrigin], appRunCallbacks: [receiverOrigin] } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Helper', 'AGENT: Helper\nGOAL: "Help the caller."\n');
});
afterAll(async () => {
  await stack.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

const base = (env = 'dev', appId = t.projectId) => `/api/v2/apps/${appId}/environments/${env}`;
const xKey = (key: string) => ({ 'x-api-key': key });
const post = (path: string, json: unknown, key = t.adminKey) => api.post(path, { headers: xKey(key), json });
const create = (identity: { type: string; value: string }[], extra: Record<string, unknown> = {}, key = t.adminKey) =>
  post(`${base()}/sessions`, { sessionIdentity: identity, ...extra }, key);
const execute = (json: Record<string, unknown>, key = t.adminKey) => post(`${base()}/runs/execute`, json, key);
const text = (content: string) => [{ type: 'text', content }];
let refSeq = 0;
const ref = (prefix: string) => `${prefix}-${++refSeq}-${Date.now()}`;

describe('Session Create', () => {
  it('creates an AgentSession workflow on channel api with the spec body, and finds it again by its reference', async () => {
    const reference = ref('order');
    const res = await create([
      { type: 'sessionReference', value: reference },
      { type: 'userReference', value: 'customer-1' },
    ]);
    expect(res.status).toBe(200);
    const body = ZCreateAppSessionResponse.parse(res.body);
    expect(body.session).toEqual({
      sessionId: expect.stringMatching(/^s-[0-9a-f-]{36}$/),
      sessionReference: reference,
      userReference: 'customer-1',
      status: 'idle',
      userId: expect.stringMatching(/^u-[0-9a-f]{32}$/),
      createdAt: expect.any(String),
      source: 'AP',
    });
    // An admin key holds DOCUMENT_UPLOAD: uploads are on, with the platform's limits.
    expect(body).toMatchObject({
      events: [],
      output: [],
      allowedMimeTypes: expect.arrayContaining(['txt', 'pdf', 'png']),
      fileUploadConfig: { enabled: true, isAttachmentsEnabled: true, maxFileCount: 20, maxFileSize: 10, maxTokens: 200000 },
    });
    const uuid = body.session!.sessionId.slice(2);

    // The same session as the core routes and the Temporal Web UI see it.
    const core = await api.get(`/api/projects/${t.projectId}/sessions/${uuid}`, { key: t.adminKey });
    expect(core.status).toBe(200);
    expect(core.body.session).toMatchObject({ id: uuid, channel: 'api', environment: 'dev' });
    const description = await (await stack.ctx.temporal.client()).workflow.getHandle(`session/${uuid}`).describe();
    expect(description.typedSearchAttributes.get(ChannelKey)).toBe('api');
    expect(description.typedSearchAttributes.get(TenantIdKey)).toBe(t.tenantId);
    expect(description.typedSearchAttributes.get(ProjectIdKey)).toBe(t.projectId);
    expect(description.typedSearchAttributes.get(SessionIdKey)).toBe(uuid);

    const again = await create([{ type: 'sessionReference', value: reference }], { source: 'AIS-AA' });
    expect(again.status).toBe(200);
    expect(again.body.session.sessionId).toBe(body.session!.sessionId);
    // The source is the creator's; a later lookup does not change it.
    expect(again.body.session.source).toBe('AP');
  });

  it("answers with a Welcome_Event when the entry agent greets, and the first run does not greet again", async () => {
    const g = await seedTenant(stack.ctx);
    await publishAgent(api, g, 'Greeter', 'AGENT: Greeter\nGOAL: "Greet."\nON_START:\n  RESPOND: "Hello, I am the greeter."\n');
    const res = await post(`${base('dev', g.projectId)}/sessions`, { sessionIdentity: [{ type: 'sessionReference', value: 'greet-1' }] }, g.adminKey);
    expect(res.status).toBe(200);
    expect(res.body.events).toEqual([{ type: 'Welcome_Event', content: { messageToUser: 'Hello, I am the greeter.' }, params: { reason: 'session_start' } }]);
    expect(res.body.output).toEqual([{ type: 'text', content: 'Hello, I am the greeter.' }]);
    // Found again, it does not greet again.
    const again = await post(`${base('dev', g.projectId)}/sessions`, { sessionIdentity: [{ type: 'sessionReference', value: 'greet-1' }] }, g.adminKey);
    expect(again.body.events).toEqual([]);
    const run = await post(`${base('dev', g.projectId)}/runs/execute`, { sessionIdentity: [{ type: 'sessionReference', value: 'greet-1' }], input: text('hi') }, g.adminKey);
    expect(run.status).toBe(200);
    expect(run.body.output[0].content).not.toContain('Hello, I am the greeter.');
    const uuid = (res.body.session.sessionId as string).slice(2);
    const transcript = await api.get(`/api/v1/sessions/${uuid}/transcripts`, { key: g.adminKey });
    expect(transcript.body.messages.map((m: { role: string; content: string }) => [m.role, m.content]).slice(0, 2)).toEqual([
      ['assistant', 'Hello, I am the greeter.'],
      ['user', 'hi'],
    ]);
  });

  it('follows the priority sessionIdentity > sessionReference > userReference', async () => {
    const user = ref('user');
    const a = (await create([{ type: 'userReference', value: user }], { source: 'AIW' })).body.session;
    expect(a.source).toBe('AIW');
    // userReference alone finds that user's live session.
    expect((await create([{ type: 'userReference', value: user }])).body.session.sessionId).toBe(a.sessionId);
    // A sessionReference outranks it: a new session for that reference, owned by the user.
    const referenced = ref('ref');
    const b = (await create([{ type: 'userReference', value: user }, { type: 'sessionReference', value: referenced }])).body.session;
    expect(b.sessionId).not.toBe(a.sessionId);
    expect(b.userId).toBe(a.userId);
    // sessionIdentity outranks both.
    const c = await create([
      { type: 'sessionReference', value: referenced },
      { type: 'sessionIdentity', value: a.sessionId },
    ]);
    expect(c.body.session.sessionId).toBe(a.sessionId);
    // The bare UUID names it too.
    expect((await create([{ type: 'sessionIdentity', value: a.sessionId.slice(2) }])).body.session.sessionId).toBe(a.sessionId);
    // A reference owned by another user is a conflict, not a silent hand-over.
    const conflict = await create([{ type: 'sessionReference', value: referenced }, { type: 'userReference', value: 'someone-else' }]);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ success: false, error: { code: 'CONFLICT', message: 'This sessionReference belongs to another userReference', requestId: expect.stringMatching(/^tr-/) } });
    // The first item of a type counts.
    const twice = await create([
      { type: 'userReference', value: user },
      { type: 'userReference', value: 'someone-else' },
    ]);
    expect(twice.body.session.sessionId).toBe(b.sessionId);
    // No identity: always a new session.
    const n1 = (await create([])).body.session.sessionId;
    const n2 = (await create([])).body.session.sessionId;
    expect(n1).not.toBe(n2);
  });

  it('answers 404 for a session id it does not know, and for an environment with no deployment', async () => {
    for (const value of ['s-00000000-0000-4000-8000-000000000000', 'not-a-session-id']) {
      const unknown = await create([{ type: 'sessionIdentity', value }]);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Session not found', requestId: expect.stringMatching(/^tr-/) } });
    }
    const staging = await post(`${base('staging')}/sessions`, { sessionIdentity: [] });
    expect(staging.status).toBe(404);
    expect(staging.body.error.code).toBe('NOT_FOUND');
  });

  it('refuses bad bodies with 400 in the envelope', async () => {
    const cases: unknown[] = [
      { sessionIdentity: [{ type: 'phone', value: 'x' }] },
      { sessionIdentity: [{ type: 'userReference', value: '' }] },
      { sessionIdentity: [], source: 'NOPE' },
      { sessionIdentity: 'order-1' },
    ];
    for (const json of cases) {
      const res = await post(`${base()}/sessions`, json);
      expect({ json, status: res.status, code: res.body?.error?.code, success: res.body?.success }).toEqual({ json, status: 400, code: 'VALIDATION_ERROR', success: false });
    }
    const env = await post(`${base('qa')}/sessions`, {});
    expect(env.status).toBe(400);
    // The environment is matched in any letter case.
    expect((await post(`${base('DEV')}/sessions`, {})).status).toBe(200);
  });
});

describe('OAuth tools', () => {
  const mailAgent = () => `AGENT: Mailer
GOAL: "Read the mail."
TOOLS:
  read_mail() -> {status: string}
    type: http
    endpoint: "${receiverOrigin}/mail"
    method: GET
    auth: oauth2_user
    auth_config:
      authorization_url: "https://idp.example.com/authorize"
      idp_name: "ExampleIdP"
      access_token: "{{secrets.MAIL_TOKEN}}"
FLOW:
  steps: [check]
  check:
    REASONING: false
    CALL: read_mail
    AS: mail
    ON_SUCCESS:
      RESPOND: "Mail: {{mail.status}}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "I could not read the mail."
      THEN: COMPLETE
`;

  it('answers with IDP_Redirect until the access token is stored; the tool fails until then', async () => {
    const o = await seedTenant(stack.ctx);
    await publishAgent(api, o, 'Mailer', mailAgent());
    const createIn = (reference: string) => post(`${base('dev', o.projectId)}/sessions`, { sessionIdentity: [{ type: 'sessionReference', value: reference }] }, o.adminKey);

    const before = mailRequests.length;
    const unauthorised = await createIn('mail-1');
    expect(unauthorised.status).toBe(200);
    const body = ZCreateAppSessionResponse.parse(unauthorised.body);
    expect(body.session).toBeUndefined();
    expect(body.messageId).toMatch(/^msg-/);
    expect(body.events[0]).toEqual({
      type: 'IDP_Redirect',
      content: { auth_profiles: [{ url: 'https://idp.example.com/authorize', idpName: 'ExampleIdP', isAuthorized: false, sso_type: 'oauth2' }] },
    });
    expect(body.sessionInfo).toMatchObject({ status: 'idle', sessionReference: 'mail-1', sessionId: expect.stringMatching(/^s-/), runId: null, appId: o.projectId, attachments: [] });
    // The session started all the same; its tool call failed without reaching the server.
    expect(body.events[1]).toMatchObject({ type: 'Welcome_Event', content: { messageToUser: 'I could not read the mail.' } });
    expect(mailRequests.length).toBe(before);

    const stored = await api.post('/api/tool-secrets', { key: o.adminKey, json: { projectId: o.projectId, toolName: 'read_mail', secretKey: 'MAIL_TOKEN', value: 'user-access-token-1', allowedHosts: [new URL(receiverOrigin).host] } });
    expect(stored.status).toBe(201);
    const authorised = await createIn('mail-2');
    expect(authorised.body.session).toMatchObject({ sessionReference: 'mail-2', status: 'idle' });
    expect(authorised.body.events).toEqual([{ type: 'Welcome_Event', content: { messageToUser: 'Mail: 3 new' }, params: { reason: 'session_start' } }]);
    expect(mailRequests.slice(before).map((h) => h.authorization)).toEqual(['Bearer user-access-token-1']);
  });
});

describe('tenancy and permissions', () => {
  it("answers 404 to another project's key on every route, and 403 without the permission", async () => {
    const otherProjectKey = await t.keyWith(['session:execute', 'session:read'], t.otherProjectId);
    const session = (await create([{ type: 'sessionReference', value: ref('tenancy') }])).body.session;
    const calls = [
      () => create([], {}, otherProjectKey),
      () => post(`/api/public/apps/${t.projectId}/sessions/list`, {}, otherProjectKey),
      () => api.get(`/api/public/apps/${t.projectId}/sessions?session_id=${session.sessionId}`, { headers: xKey(otherProjectKey) }),
      () => post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionId', value: session.sessionId }] }, otherProjectKey),
      () => execute({ sessionIdentity: [{ type: 'sessionIdentity', value: session.sessionId }], input: text('hi') }, otherProjectKey),
      () => post(`${base()}/runs/r-abcdefghijkl/status`, {}, otherProjectKey),
    ];
    for (const call of calls) {
      const res = await call();
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    // Another tenant's app is 404 as well.
    const stranger = await seedTenant(stack.ctx);
    expect((await create([], {}, stranger.adminKey)).status).toBe(404);
    // The session is untouched.
    expect((await create([{ type: 'sessionIdentity', value: session.sessionId }])).body.session.status).toBe('idle');

    const readOnly = await t.keyWith(['session:read'], t.projectId);
    const refused = await create([], {}, readOnly);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect((await post(`/api/public/apps/${t.projectId}/sessions/list`, {}, readOnly)).status).toBe(200);
    const executeOnly = await t.keyWith(['session:execute'], t.projectId);
    expect((await post(`/api/public/apps/${t.projectId}/sessions/list`, {}, executeOnly)).status).toBe(403);
    expect((await api.post(`${base()}/sessions`, { json: {} })).status).toBe(401);
  });

  it('keeps a key bound to staging out of dev: 403 naming dev, 404 for a dev session, and lists only staging', async () => {
    const made = await api.post('/api/api-keys', {
      key: t.adminKey,
      json: { name: 'staging only', projectId: t.projectId, permissions: ['session:execute', 'session:read'], environments: ['staging'] },
    });
    expect(made.status).toBe(201);
    const stagingKey: string = made.body.key;
    const devSession = (await create([{ type: 'sessionReference', value: ref('dev-only') }])).body.session;

    const refused = await create([{ type: 'sessionReference', value: ref('staging-try') }], {}, stagingKey);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect((await post(`${base()}/runs/execute`, { sessionIdentity: [{ type: 'sessionIdentity', value: devSession.sessionId }], input: text('hi') }, stagingKey)).status).toBe(403);
    expect((await post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionId', value: devSession.sessionId }] }, stagingKey)).status).toBe(403);
    expect((await post(`/api/public/apps/${t.projectId}/sessions/list`, { env_name: 'dev' }, stagingKey)).status).toBe(403);
    const detail = await api.get(`/api/public/apps/${t.projectId}/sessions?session_id=${devSession.sessionId}`, { headers: xKey(stagingKey) });
    expect(detail.status).toBe(404);
    const listed = await post(`/api/public/apps/${t.projectId}/sessions/list`, {}, stagingKey);
    expect(listed.status).toBe(200);
    expect(listed.body.sessions.map((x: { session_id: string }) => x.session_id)).not.toContain(devSession.sessionId);
    // The same list by an unbound key has the dev session: the filter is the binding, not the window.
    const all = await post(`/api/public/apps/${t.projectId}/sessions/list`, {});
    expect(all.body.sessions.map((x: { session_id: string }) => x.session_id)).toContain(devSession.sessionId);
    // The dev session is untouched.
    expect((await create([{ type: 'sessionIdentity', value: devSession.sessionId }])).body.session.status).toBe('idle');
  });
});

describe('runs', () => {
  it('closes a run whose API process stopped mid-request, so its session is no longer busy', async () => {
    const reference = ref('interrupted');
    const done = ZExecuteRunResponse.parse((await execute({ sessionIdentity: [{ type: 'sessionReference', value: reference }], input: text('hello') })).body);
    const sessionId = done.sessionInfo.sessionId.replace(/^s-/, '');
    // What a process leaves when it stops in the middle of a synchronous run.
    const old = new Date(Date.now() - staleRunAgeMs(stack.config) - 1_000);
    const runId = `r-interrupted${refSeq}`;
    await stack.ctx.models.AppRun.create({ _id: runId, tenantId: t.tenantId, projectId: t.projectId, sessionId, messageId: 'msg-x', status: 'running', message: 'hi', createdAt: old });
    await stack.ctx.models.AppSession.updateOne({ _id: sessionId, tenantId: t.tenantId }, { $inc: { activeRuns: 1 } });
    expect((await create([{ type: 'sessionReference', value: reference }])).body.session.status).toBe('busy');
    // A run younger than the stale age is left to its request.
    expect(await closeInterruptedRuns(stack.ctx, new Date(old.getTime() + staleRunAgeMs(stack.config) - 1))).toBe(0);
    expect(await closeInterruptedRuns(stack.ctx)).toBe(1);
    expect((await create([{ type: 'sessionReference', value: reference }])).body.session.status).toBe('error');
    const status = await post(`${base()}/runs/${runId}/status`, {});
    expect(status.body.run).toMatchObject({ status: 'failed', error: INTERRUPTED_RUN_ERROR });
    expect(await closeInterruptedRuns(stack.ctx)).toBe(0);
  });

  it('fails an async run whose workflow an operator terminated in Temporal, so its session is no longer busy', async () => {
    const reference = ref('terminated-run');
    const session = (await create([{ type: 'sessionReference', value: reference }])).body.session;
    const since = new Date(Date.now() - 60_000);
    // The run's workflow on a queue no worker polls: still before its turn when it is terminated.
    const before = stack.ctx.config;
    stack.ctx.config = { ...before, TEMPORAL_TASK_QUEUE: `no-worker-${refSeq}-${Date.now()}` };
    let runId: string;
    try {
      const res = await execute({ sessionIdentity: [{ type: 'sessionIdentity', value: session.sessionId }], input: text('hello'), isAsync: true });
      expect(res.status).toBe(202);
      runId = res.body.runId;
    } finally {
      stack.ctx.config = before;
    }
    const temporal = await stack.ctx.temporal.client();
    await temporal.workflow.getHandle(`app-run/${runId}`).terminate('operator: stuck run');
    expect((await create([{ type: 'sessionReference', value: reference }])).body.session.status).toBe('busy');
    const deps = { models: stack.ctx.models, config: stack.config, logger: stack.ctx.logger, temporalClient: temporal };
    // Visibility lists a close a moment after it: looked at again until the run is in.
    await eventually(() => reconcileClosedWorkflows(deps, since), (r) => r.runsFailed === 1, 30_000, 250);
    const status = await post(`${base()}/runs/${runId}/status`, {});
    expect(status.body.run).toMatchObject({ status: 'failed', error: closedRunError('TERMINATED') });
    expect(status.body.run.error.message).toMatch(/^The run's workflow was terminated in Temporal/);
    expect((await create([{ type: 'sessionReference', value: reference }])).body.session.status).toBe('error');
    expect((await reconcileClosedWorkflows(deps, since)).runsFailed).toBe(0);
    // Its place is free: the session takes runs again.
    const next = await execute({ sessionIdentity: [{ type: 'sessionIdentity', value: session.sessionId }], input: text('again'), isAsync: true });
    expect(next.status).toBe(202);
  });

  it('runs a turn synchronously; the run and the detail carry the same r- id, with observations from the trace', async () => {
    const reference = ref('sync');
    // Any JSON as metadata, even what a document cannot hold (nested arrays).
    const res = await execute({ sessionIdentity: [{ type: 'sessionReference', value: reference }], input: text('hello there'), metadata: { nested: [[1, 2], []] } });
    expect(res.status).toBe(200);
    const body = ZExecuteRunResponse.parse(res.body);
    expect(body.messageId).toMatch(/^msg-/);
    expect(body.output).toEqual([{ type: 'text', content: expect.any(String) }]);
    expect(body.output[0]!.content.length).toBeGreaterThan(0);
    expect(body.sessionInfo).toMatchObject({ status: 'idle', runId: expect.stringMatching(/^r-/), appId: t.projectId, sessionReference: reference });

    const status = await post(`${base()}/runs/${body.sessionInfo.runId}/status`, {});
    expect(status.status).toBe(200);
    expect(status.body.run).toMatchObject({ runId: body.sessionInfo.runId, messageId: body.messageId, status: 'success', output: body.output, callback: null });

    const detail = await api.get(`/api/public/apps/${t.projectId}/sessions?sessionId=${body.sessionInfo.sessionId}&include=traces&include=observations`, {
      headers: xKey(t.adminKey),
    });
    expect(detail.status).toBe(200);
    const parsed = ZAppSessionDetailResponse.parse(detail.body);
    expect(parsed.pagination).toEqual({ page: 1, limit: 1, total: 1 });
    const item = parsed.sessions[0]!;
    expect(item).toMatchObject({ session_id: body.sessionInfo.sessionId, environment: 'dev', session_reference: reference, app_version_id: 'av-latest', source: 'AP' });
    const trace = item.traces!.find((tr) => tr.trace_id === body.sessionInfo.runId);
    expect(trace).toMatchObject({ input: 'hello there', output: body.output[0]!.content, environment: 'dev', env_id: 'dev' });
    const generation = trace!.observations!.find((o) => o.type === 'GENERATION');
    expect(generation).toMatchObject({ provider: 'local', token_usage: { input: expect.any(Number), output: expect.any(Number), total: expect.any(Number) } });
    expect(generation!.token_usage!.total).toBe(generation!.token_usage!.input + generation!.token_usage!.output);

    // Without include, no traces; with traces only, no observations.
    const plain = await api.get(`/api/public/apps/${t.projectId}/sessions?session_id=${body.sessionInfo.sessionId}`, { headers: xKey(t.adminKey) });
    expect(plain.body.sessions[0].traces).toBeUndefined();
    const tracesOnly = await api.get(`/api/public/apps/${t.projectId}/sessions?session_id=${body.sessionInfo.sessionId}&include=traces`, { headers: xKey(t.adminKey) });
    expect(tracesOnly.body.sessions[0].traces.length).toBeGreaterThan(0);
    expect(tracesOnly.body.sessions[0].traces[0].observations).toBeUndefined();
  });

  it('streams a run as SSE, the last event with isLastEvent: true', async () => {
    const res = await fetch(`${stack.baseUrl}${base()}/runs/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...xKey(t.adminKey) },
      body: JSON.stringify({ sessionIdentity: [{ type: 'sessionReference', value: ref('sse') }], input: text('hello'), stream: { enable: true }, isAsync: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n\n')
      .filter((block) => block.startsWith('event:'))
      .map((block) => JSON.parse(block.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>);
    expect(events[0]).toMatchObject({ type: 'run.started', eventIndex: 0, isLastEvent: false });
    const last = events[events.length - 1]!;
    expect(last).toMatchObject({ type: 'run.completed', isLastEvent: true, output: [{ type: 'text', content: expect.any(String) }], sessionInfo: { status: 'idle' } });
    expect(events.filter((e) => e.isLastEvent)).toHaveLength(1);
    expect(events.map((e) => e.eventIndex)).toEqual(events.map((_, i) => i));
    expect(events.some((e) => e.type === 'trace')).toBe(true);
  });

  it('delivers an async run to the callback, retried after two failures, the same signed message each time', async () => {
    failFirst = deliveries.length + 2;
    const before = deliveries.length;
    const token = 'callback-token-0123456789';
    const res = await execute({
      sessionIdentity: [{ type: 'sessionReference', value: ref('async') }],
      input: text('hello async'),
      isAsync: true,
      callbackUrl: `${receiverOrigin}/hook`,
      callbackToken: token,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'processing', runId: expect.stringMatching(/^r-/), output: [], sessionInfo: { status: 'busy' } });
    const runId = res.body.runId as string;

    const got = await eventually(
      async () => deliveries.slice(before),
      (d) => d.length >= 3,
      30_000,
      100,
    );
    expect(got).toHaveLength(3);
    for (const d of got) {
      expect(d.body).toBe(got[0]!.body);
      const timestamp = d.headers['x-abl-timestamp'] as string;
      expect(timestamp).toMatch(/^[0-9]+$/);
      const expected = `sha256=${createHmac('sha256', token).update(`${timestamp}.${d.body}`).digest('hex')}`;
      expect(d.headers['x-abl-signature']).toBe(expected);
      expect(JSON.stringify(d.headers)).not.toContain(token);
    }
    const delivered = JSON.parse(got[0]!.body) as Record<string, unknown>;
    expect(delivered).toMatchObject({ runId, messageId: res.body.messageId, status: 'success', output: [{ type: 'text', content: expect.any(String) }] });

    const status = await eventually(
      () => post(`${base()}/runs/${runId}/status`, {}),
      (r) => r.body.run?.callback?.deliveredAt !== null,
      10_000,
      100,
    );
    expect(status.body.run).toMatchObject({ status: 'success', callback: { attempts: 3, deliveredAt: expect.any(String) } });
    expect(status.body.sessionInfo.status).toBe('idle');
    // The token is stored encrypted, never in clear.
    const stored = await stack.ctx.models.AppRun.findById(runId).lean();
    expect(JSON.stringify(stored)).not.toContain(token);
    // The run went through a workflow visible by its session in the Temporal Web UI.
    const run = await (await stack.ctx.temporal.client()).workflow.getHandle(`app-run/${runId}`).describe();
    expect(run.typedSearchAttributes.get(SessionIdKey)).toBe(stored!.sessionId);
  });

  it('runs async without a callback, for polling', async () => {
    const res = await execute({ sessionIdentity: [{ type: 'sessionReference', value: ref('poll') }], input: text('hi'), isAsync: true });
    expect(res.status).toBe(202);
    const status = await eventually(
      () => post(`${base()}/runs/${res.body.runId}/status`, {}),
      (r) => r.body.run?.status === 'success',
      15_000,
      100,
    );
    expect(status.body.run.status).toBe('success');
    expect(status.body.run.callback).toBeNull();
  });

  it('marks the session error when its run fails', async () => {
    const session = (await create([{ type: 'sessionReference', value: ref('broken') }])).body.session;
    // Its workflow disappears behind the API's back.
    await (await stack.ctx.temporal.client()).workflow.getHandle(`session/${session.sessionId.slice(2)}`).terminate('test');
    const failed = await execute({ sessionIdentity: [{ type: 'sessionIdentity', value: session.sessionId }], input: text('hello?') });
    expect(failed.status).toBe(409);
    const after = await create([{ type: 'sessionIdentity', value: session.sessionId }]);
    expect(after.body.session.status).toBe('error');
  });

  it('refuses bad run bodies with 400, and a callback to a private address with 422', async () => {
    const identity = [{ type: 'sessionReference', value: ref('bad') }];
    const cases: unknown[] = [
      { sessionIdentity: identity, input: [] },
      { sessionIdentity: identity, input: [{ type: 'image', content: 'x' }] },
      { sessionIdentity: identity, input: [{ type: 'text', content: '  ' }] },
      { sessionIdentity: identity, input: [{ type: 'tool_input', content: { order: 1 } }] },
      { sessionIdentity: identity, input: text('x'.repeat(16_001)) },
      { sessionIdentity: identity, input: text('hi'), isAsync: true, callbackUrl: `${receiverOrigin}/hook` },
      { sessionIdentity: identity, input: text('hi'), isAsync: true, callbackUrl: 'ftp://example.com/x', callbackToken: 'callback-token-0123456789' },
      { input: text('hi') },
      { sessionIdentity: identity, input: text('hi'), metadata: { a: { b: { c: { d: { e: {} } } } } } },
      { sessionIdentity: identity, input: text('hi'), metadata: { big: 'x'.repeat(17_000) } },
    ];
    for (const json of cases) {
      const res = await execute(json as Record<string, unknown>);
      expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
    }
    // Schema-valid, but not a destination the platform calls: 422, as for HTTP-async callback URLs.
    const privateCallback = await execute({ sessionIdentity: identity, input: text('hi'), isAsync: true, callbackUrl: 'http://10.0.0.1/hook', callbackToken: 'callback-token-0123456789' });
    expect({ status: privateCallback.status, code: privateCallback.body?.error?.code }).toEqual({ status: 422, code: 'UNPROCESSABLE_ENTITY' });
    expect((await post(`${base()}/runs/r-doesnotexist1/status`, {})).status).toBe(404);
  });
});

describe('Session Details list', () => {
  it('lists by environment, references and time window, with the spec defaults', async () => {
    const user = ref('lister');
    const one = (await create([{ type: 'userReference', value: user }, { type: 'sessionReference', value: ref('l1') }])).body.session;
    const two = (await create([{ type: 'userReference', value: user }, { type: 'sessionReference', value: ref('l2') }])).body.session;
    const listPath = `/api/public/apps/${t.projectId}/sessions/list`;
    const res = await post(listPath, { env_name: 'DEV', user_reference_id: user });
    expect(res.status).toBe(200);
    const body = ZListAppSessionsResponse.parse(res.body);
    expect(body.total_count).toBe(2);
    expect(body.sessions.map((s) => s.session_id)).toEqual([two.sessionId, one.sessionId]);
    expect(body.sessions[0]).toMatchObject({ user_reference_id: user, env_name: 'dev', end_time: null, source: 'AP' });

    const paged = await post(`${listPath}?limit=1&offset=1`, { user_reference_id: user });
    expect(paged.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([one.sessionId]);
    expect(paged.body.total_count).toBe(2);
    const byRef = await post(listPath, { session_reference_id: one.sessionReference });
    expect(byRef.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([one.sessionId]);
    // A window in the past holds none of them.
    const past = await post(listPath, { user_reference_id: user, end_time: '2020-01-02T00:00:00Z' });
    expect(past.body).toEqual({ sessions: [], total_count: 0 });
    const anonymousRef = await post(listPath, {});
    expect(anonymousRef.status).toBe(200);
    // A window that ends before it starts holds nothing.
    const inverted = await post(listPath, { user_reference_id: user, start_time: '2099-01-02T00:00:00Z', end_time: '2099-01-01T00:00:00Z' });
    expect(inverted.body).toEqual({ sessions: [], total_count: 0 });

    for (const [query, json] of [
      ['?limit=101', {}],
      ['?limit=0', {}],
      ['', { env_name: 'moon' }],
      ['', { start_time: 'yesterday' }],
    ] as const) {
      const bad = await post(`${listPath}${query}`, json);
      expect({ query, json, status: bad.status, code: bad.body.error?.code }).toEqual({ query, json, status: 400, code: 'VALIDATION_ERROR' });
    }
  });
});

describe('Session Terminate', () => {
  it('ends the workflow with an End_of_Conversation summary, succeeds again, and frees the reference', async () => {
    const reference = ref('bye');
    await execute({ sessionIdentity: [{ type: 'sessionReference', value: reference }, { type: 'userReference', value: 'u-bye' }], input: text('hello') });
    const session = (await create([{ type: 'sessionReference', value: reference }])).body.session;
    const terminate = () => post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionReference', value: reference }] });

    const first = await terminate();
    expect(first.status).toBe(200);
    const body = ZTerminateResponse.parse(first.body);
    expect(body).toMatchObject({ status: 'terminated', sessionId: session.sessionId, sessionReference: reference, userReference: 'u-bye', appId: t.projectId, attachments: [] });
    expect(body.events).toEqual([
      {
        type: 'End_of_Conversation',
        content: { messageToUser: 'The conversation has ended.' },
        params: { reason: 'terminated', conversationSummary: expect.stringContaining('The user opened with: "hello"') },
      },
    ]);
    const uuid = session.sessionId.slice(2);
    const closed = await (await stack.ctx.temporal.client()).workflow.getHandle(`session/${uuid}`).describe();
    expect(closed.status.name).not.toBe('RUNNING');
    const core = await eventually(
      () => stack.ctx.models.Session.findById(uuid).lean(),
      (s) => s?.status === 'ended',
      10_000,
      50,
    );
    expect(core?.status).toBe('ended');

    // Terminating again succeeds; by id too.
    const second = await post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionId', value: session.sessionId }] });
    expect(second.status).toBe(200);
    expect(second.body.events[0].params.reason).toBe('already_terminated');
    expect(second.body.sessionId).toBe(session.sessionId);
    const missing = await post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionReference', value: ref('never') }] });
    expect(missing.status).toBe(200);
    expect(missing.body.events[0].params.reason).toBe('not_found');
    const notAnId = await post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'sessionId', value: 'order-1' }] });
    expect(notAnId.status).toBe(200);
    expect(notAnId.body).toMatchObject({ sessionId: null, events: [{ params: { reason: 'not_found' } }] });

    // The terminated session is shown as such, and runs on it are refused; the reference starts a new one.
    expect((await create([{ type: 'sessionIdentity', value: session.sessionId }])).body.session.status).toBe('terminated');
    expect((await execute({ sessionIdentity: [{ type: 'sessionIdentity', value: session.sessionId }], input: text('hi') })).status).toBe(409);
    const fresh = (await create([{ type: 'sessionReference', value: reference }])).body.session;
    expect(fresh.sessionId).not.toBe(session.sessionId);
    const listed = await post(`/api/public/apps/${t.projectId}/sessions/list`, { session_reference_id: reference });
    const ended = listed.body.sessions.find((s: { session_id: string }) => s.session_id === session.sessionId);
    expect(ended.end_time).toEqual(expect.any(String));
  });

  it('refuses userReference as a terminate identity', async () => {
    const res = await post(`${base()}/sessions/terminate`, { sessionIdentity: [{ type: 'userReference', value: 'x' }] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  });
});

describe('the session message rate', () => {
  it('refuses a run over the rate with 429 without counting it as a failed run', async () => {
    const limited = await startTestStack({ worker: true, env: { SESSION_MESSAGES_PER_MINUTE: '1' } });
    try {
      const lapi = client(limited.baseUrl);
      const owner = await seedTenant(limited.ctx);
      await publishAgent(lapi, owner, 'Helper', 'AGENT: Helper\nGOAL: "Help the caller."\n');
      const run = () =>
        lapi.post(`/api/v2/apps/${owner.projectId}/environments/dev/runs/execute`, {
          headers: xKey(owner.adminKey),
          json: { sessionIdentity: [{ type: 'sessionReference', value: 'rate-1' }], input: text('hello') },
        });
      expect((await run()).status).toBe(200);
      const refused = await run();
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      const session = await lapi.post(`/api/v2/apps/${owner.projectId}/environments/dev/sessions`, {
        headers: xKey(owner.adminKey),
        json: { sessionIdentity: [{ type: 'sessionReference', value: 'rate-1' }] },
      });
      expect(session.body.session.status).toBe('idle');
      expect(await limited.ctx.models.AppRun.countDocuments({ tenantId: owner.tenantId })).toBe(1);
    } finally {
      await limited.close();
    }
  });
});

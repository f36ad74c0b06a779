// Crashes lose no turn: a worker killed in the middle of a turn, an API process killed while its
// client waits, and a Temporal dev server restarted on its SQLite file all end with the turn
// answered once and the session intact. A worker stopped gracefully (a redeploy) lets its tool
// call finish instead of cancelling it, so the tool is not called twice; an API process stopped
// gracefully answers a turn still running after its grace period with 503, and the retry gets
// the turn's answer.
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, startTemporalDevServer } from '../../../infra/processes';
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack, type TestStackOptions } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';
import { startApiProcess } from '../../support/api-process';
import { publishAgent } from '../../support/agents';

jest.setTimeout(120_000);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-durability-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** An agent whose one flow step calls `lookup` on the given port. */
async function createSlowAgent(api: ReturnType<typeof client>, t: SeededTenant, port: number): Promise<void> {
  const source = `AGENT: Slow_Agent
GOAL: "Look the weather up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/lookup"
    method: GET
    timeout: 3000
FLOW:
  steps: [fetch]
  fetch:
    REASONING: false
    CALL: lookup(q = "weather")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
    ON_FAIL:
      RESPOND: "Lookup failed"
`;
  await publishAgent(api, t, 'Slow_Agent', source);
}

/**
 * The `lookup` tool: answers `{answer: 'sunny'}` after `delayMs(n)` for the n-th call (1-based),
 * calling `onCall` first. Returns its port and a close function.
 */
async function startWeatherTool(delayMs: (n: number) => number, onCall: () => void): Promise<{ port: number; close: () => Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    calls += 1;
    onCall();
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: 'sunny' }));
    }, delayMs(calls));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * For one describe block: a stack (started with `options`), a tenant, and Slow_Agent over a
 * `lookup` tool that answers every call after `delayMs`, counting calls and calling `onToolCall`.
 */
function slowToolFixture(delayMs: number, options: TestStackOptions = {}) {
  const fixture = {
    stack: undefined as unknown as TestStack,
    t: undefined as unknown as SeededTenant,
    toolCalls: 0,
    onToolCall: (): void => undefined,
  };
  let tool: Awaited<ReturnType<typeof startWeatherTool>>;
  beforeAll(async () => {
    tool = await startWeatherTool(
      () => delayMs,
      () => {
        fixture.toolCalls += 1;
        fixture.onToolCall();
      },
    );
    fixture.stack = await startTestStack({ ...options, env: { ...FAST_FAILOVER_ENV, ...options.env }, allowPrivate: { tools: [`http://127.0.0.1:${tool.port}`] } });
    fixture.t = await seedTenant(fixture.stack.ctx);
    await createSlowAgent(client(fixture.stack.baseUrl), fixture.t, tool.port);
  });
  afterAll(async () => {
    await tool.close();
    await fixture.stack.close();
  });
  return fixture;
}

type SlowToolFixture = ReturnType<typeof slowToolFixture>;

/** The fixture tenant's weather question to the API at `baseUrl`, with an Idempotency-Key. */
function askWeather(f: SlowToolFixture, baseUrl: string, idempotencyKey: string) {
  return client(baseUrl).post('/api/v1/chat/agent', {
    key: f.t.adminKey,
    headers: { 'Idempotency-Key': idempotencyKey },
    json: { projectId: f.t.projectId, message: 'weather please' },
  });
}

describe('a worker killed mid-turn', () => {
  let stack: TestStack;
  let t: SeededTenant;
  let tool: Awaited<ReturnType<typeof startWeatherTool>>;
  const requests: number[] = [];
  let onFirstRequest: () => void = () => undefined;

  beforeAll(async () => {
    // The tool answers the first call only after a long pause (the worker dies meanwhile) and
    // every later call at once.
    tool = await startWeatherTool(
      (n) => (n === 1 ? 20_000 : 0),
      () => {
        requests.push(Date.now());
        if (requests.length === 1) onFirstRequest();
      },
    );
    stack = await startTestStack({ env: FAST_FAILOVER_ENV, allowPrivate: { tools: [`http://127.0.0.1:${tool.port}`] } });
    t = await seedTenant(stack.ctx);
    await createSlowAgent(client(stack.baseUrl), t, tool.port);
  });
  afterAll(async () => {
    await tool.close();
    await stack.close();
  });

  it('finishes the turn on a new worker and answers once', async () => {
    const first = await startWorkerProcess(stack.config);
    const killed = new Promise<void>((resolve) => {
      onFirstRequest = () => {
        first.child.kill('SIGKILL');
        resolve();
      };
    });
    const api = client(stack.baseUrl);
    const reply = api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'weather please' } });
    await killed;
    await first.exited;
    const second = await startWorkerProcess(stack.config);
    try {
      const res = await reply;
      expect(res.status).toBe(200);
      expect(res.body.response).toBe('Found sunny');
      expect(requests.length).toBe(2);
      const sessionId = res.body.sessionId;
      await flushProjection(stack.ctx, sessionId);
      const messages = await stack.ctx.models.TranscriptMessage.find({ sessionId }).sort({ seq: 1 }).lean();
      expect(messages.map((m) => [m.role, m.content])).toEqual([
        ['user', 'weather please'],
        ['assistant', 'Found sunny'],
      ]);
      const results = await stack.ctx.models.TraceEvent.find({ sessionId, type: 'tool_result' }).lean();
      expect(results).toHaveLength(1);
      expect(results[0]!.data).toMatchObject({ tool: 'lookup', success: true });
    } finally {
      await second.stop();
    }
  });
});

describe('a worker stopped gracefully mid-turn', () => {
  // Every call takes 1.5 s: the worker is told to stop while the first one runs.
  const f = slowToolFixture(1_500);

  it('lets its tool call finish within SHUTDOWN_GRACE_MS, so the tool is called once', async () => {
    const first = await startWorkerProcess({ ...f.stack.config, SHUTDOWN_GRACE_MS: 8_000 });
    const stopping = new Promise<void>((resolve) => {
      f.onToolCall = () => {
        first.child.kill('SIGTERM');
        resolve();
      };
    });
    const send = () => askWeather(f, f.stack.baseUrl, 'weather-across-a-redeploy');
    const reply = send();
    await stopping;
    // The rest of the turn runs on the next worker, which boots while the first one finishes its
    // tool call, as in a rolling redeploy.
    const second = startWorkerProcess(f.stack.config);
    try {
      expect(await first.exited).toBe(0);
      await second;
      // The turn can outlive the request's REQUEST_TIMEOUT_MS: the new worker bundles the
      // workflows before it polls, and Temporal moves the turn off the stopped worker's sticky
      // queue only after a timeout. On a busy machine that took longer than the request waits,
      // and the API answered the documented 503. A client then sends the message again with
      // the same Idempotency-Key and joins the same turn, which is what this test does; the
      // tool must still have been called once.
      let res = await reply;
      const timedOut = (r: typeof res) => r.status === 503 && r.body.error?.code === 'SERVICE_UNAVAILABLE' && /retry with the same Idempotency-Key$/.test(r.body.error.message);
      while (timedOut(res)) {
        res = await send();
      }
      expect(res.status).toBe(200);
      expect(res.body.response).toBe('Found sunny');
      expect(f.toolCalls).toBe(1);
      const sessionId = res.body.sessionId;
      await flushProjection(f.stack.ctx, sessionId);
      const results = await f.stack.ctx.models.TraceEvent.find({ sessionId, type: 'tool_result' }).lean();
      expect(results.map((r) => r.data)).toEqual([expect.objectContaining({ tool: 'lookup', success: true })]);
    } finally {
      await second.then(
        (worker) => worker.stop(),
        () => undefined,
      );
    }
  });
});

describe('an API process killed while its client waits', () => {
  // The tool takes two seconds: the API process dies while the turn runs on the worker.
  const f = slowToolFixture(2_000, { worker: true });

  it('answers the retried message from the turn already running, once', async () => {
    const first = await startApiProcess(f.stack.config);
    const killed = new Promise<void>((resolve) => {
      f.onToolCall = () => {
        first.proc.child.kill('SIGKILL');
        resolve();
      };
    });
    const send = (baseUrl: string) => askWeather(f, baseUrl, 'weather-once');
    const lost = send(first.baseUrl);
    await killed;
    // The client sees the connection drop, as it would in a crash or a redeploy.
    await expect(lost).rejects.toThrow();
    await first.proc.exited;

    const second = await startApiProcess(f.stack.config);
    try {
      const res = await send(second.baseUrl);
      expect(res.status).toBe(200);
      expect(res.body.response).toBe('Found sunny');
      expect(f.toolCalls).toBe(1);
      const sessionId = res.body.sessionId;
      await flushProjection(f.stack.ctx, sessionId);
      const messages = await f.stack.ctx.models.TranscriptMessage.find({ sessionId }).sort({ seq: 1 }).lean();
      expect(messages.map((m) => [m.role, m.content])).toEqual([
        ['user', 'weather please'],
        ['assistant', 'Found sunny'],
      ]);
      const sessions = await f.stack.ctx.models.Session.find({ tenantId: f.t.tenantId }).lean();
      expect(sessions.map((session) => [session._id, session.messageCount])).toEqual([[sessionId, 2]]);
    } finally {
      await second.proc.stop();
    }
  });
});

describe('an API process stopped gracefully while its client waits', () => {
  // The tool takes 2.5 s (inside its 3 s timeout), far past the API's grace period.
  const f = slowToolFixture(2_500, { worker: true });

  it('answers 503 once the grace period is over, and the retry gets the answer of the same turn', async () => {
    const first = await startApiProcess(f.stack.config, { SHUTDOWN_GRACE_MS: '300' });
    const stopping = new Promise<void>((resolve) => {
      f.onToolCall = () => {
        first.proc.child.kill('SIGTERM');
        resolve();
      };
    });
    const send = (baseUrl: string) => askWeather(f, baseUrl, 'weather-across-a-restart');
    const cut = send(first.baseUrl);
    await stopping;
    const res = await cut;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'SERVICE_UNAVAILABLE', message: 'The API is restarting; retry with the same Idempotency-Key' },
    });
    expect(await first.proc.exited).toBe(0);

    const retried = await send(f.stack.baseUrl);
    expect(retried.status).toBe(200);
    expect(retried.body.response).toBe('Found sunny');
    expect(f.toolCalls).toBe(1);
  });
});

describe('a Temporal dev server restarted on its SQLite file', () => {
  it('continues the session where it was', async () => {
    const port = await freePort();
    const dbFile = path.join(tmp, 'temporal.sqlite');
    let server = await startTemporalDevServer({ port, uiPort: null, dbFile });
    const stack = await startTestStack({ worker: true, env: { TEMPORAL_ADDRESS: server.address } });
    try {
      const t = await seedTenant(stack.ctx);
      await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
      const api = client(stack.baseUrl);
      const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
      const first = await chat({ message: 'hello' });
      const sessionId = first.body.sessionId;
      const second = await chat({ sessionId, message: 'I have a question about my invoice' });
      expect(second.body.state.agent).toBe('Billing_Agent');

      await server.process.stop();
      server = await startTemporalDevServer({ port, uiPort: null, dbFile });

      const third = await chat({
        sessionId,
        message: 'INV-123456',
        testContext: { toolMocks: [{ toolName: 'get_invoice', response: { id: 'INV-123456', amount: 120, status: 'open' } }] },
      });
      expect(third.status).toBe(200);
      expect(third.body.state.agent).toBe('Billing_Agent');
      expect(third.body.response).toContain('Want a refund?');
      await flushProjection(stack.ctx, sessionId);
      const summary = await stack.ctx.models.Session.findById(sessionId).lean();
      expect(summary?.messageCount).toBe(6);
    } finally {
      await stack.close();
      await server.process.stop();
    }
  });
});

// The sandbox-tool activity outside a worker: outcomes become non-retryable failures with the
// message the agent sees, limits are clamped, and the HTTP memory bridge posts the spec's body to
// `${PUBLIC_BASE_URL}/api/v1/memory` with a sandbox token for the call (a real server stands in
// for the API).
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { createSandboxEngines, createSandboxToolActivities, httpMemoryBridge } from '../../../activities/tools/sandbox-tool';
import { verifySandboxToken } from '../../../core/memory-stores/sandbox-token';
import { type Config } from '../../../lib/config';
import { createLogger } from '../../../lib/logger';
import { type ToolIR } from '../../../abl/ir';

let server: Server;
let origin: string;
const received: { auth: string; body: unknown }[] = [];
let answer: { status: number; body: unknown } = { status: 200, body: { success: true, data: { text: 'hi' } } };

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      received.push({ auth: req.headers.authorization ?? '', body: JSON.parse(raw) });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await activities.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const config = () =>
  ({
    NODE_ENV: 'test',
    PUBLIC_BASE_URL: origin,
    SANDBOX_JWT_SECRET: 'a-sandbox-secret-of-at-least-32-characters',
    SANDBOX_JS_THREADS: 1,
    SANDBOX_OUTPUT_MAX_BYTES: 4096,
    SANDBOX_MAX_MEMORY_MB: 64,
    TOOL_RESULT_HISTORY_MAX_BYTES: 64 * 1024,
  }) as Config;
const claims = { tenantId: 'ten_1', projectId: 'prj_1', sessionId: 'ses_1', toolCallId: 'c7', tool: 'note' };

describe('httpMemoryBridge', () => {
  it('posts the spec body with a token naming the call, and resolves to data', async () => {
    received.length = 0;
    answer = { status: 200, body: { success: true, data: { text: 'hi' } } };
    const bridge = httpMemoryBridge(config(), claims, 5000);
    expect(await bridge.call('get', 'notes')).toEqual({ text: 'hi' });
    answer = { status: 200, body: { success: true } };
    expect(await bridge.call('set', 'notes', { text: 'new' })).toBeNull();
    expect(received.map((r) => r.body)).toEqual([
      { action: 'get', memoryStoreName: 'notes' },
      { action: 'set', memoryStoreName: 'notes', payload: { content: { text: 'new' } } },
    ]);
    const token = received[0]!.auth.replace(/^Bearer /, '');
    expect(await verifySandboxToken({ config: config() }, token)).toEqual(claims);
  });
  it('rejects with the answer\'s message', async () => {
    answer = { status: 404, body: { success: false, error: { code: 'NOT_FOUND', message: 'No active memory bridge for this session' } } };
    await expect(httpMemoryBridge(config(), claims, 5000).call('get', 'notes')).rejects.toThrow('memory.get_content("notes") failed: No active memory bridge for this session');
    answer = { status: 502, body: 'not an envelope' };
    await expect(httpMemoryBridge(config(), claims, 5000).call('delete', 'notes')).rejects.toThrow('failed: HTTP 502');
  });
});

const tool = (code: string, extra: Partial<Extract<ToolIR['binding'], { type: 'sandbox' }>> = {}): ToolIR =>
  ({ name: 'calc', binding: { type: 'sandbox', runtime: 'javascript', code, entrypoint: null, timeout_ms: 5000, memory_mb: 128, ...extra } }) as unknown as ToolIR;
const activities = (() => {
  let engines: ReturnType<typeof createSandboxEngines> | null = null;
  let made: ReturnType<typeof createSandboxToolActivities> | null = null;
  return {
    get: () => (made ??= createSandboxToolActivities({ config: config(), logger: createLogger({ level: 'silent' }) }, (engines = createSandboxEngines(config())))),
    close: async () => engines?.close(),
  };
})();
const call = (code: string, timeoutMs = 5000, extra = {}) =>
  activities.get().runSandboxTool({ tenantId: 'ten_1', projectId: 'prj_1', sessionId: 'ses_1', toolCallId: 'c1', tool: tool(code, extra), args: { n: 4 }, timeoutMs });

describe('runSandboxTool', () => {
  it('returns the code\'s value', async () => {
    expect(await call('return { n: n * 2 };')).toEqual({ n: 8 });
  });
  it('fails without retry: the exception\'s own message, or the limit that stopped the code', async () => {
    const failure = async (code: string, timeoutMs?: number, extra?: object) => {
      const err = await call(code, timeoutMs, extra).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect((err as ApplicationFailure).nonRetryable).toBe(true);
      return { type: (err as ApplicationFailure).type, message: (err as ApplicationFailure).message };
    };
    expect(await failure('throw new Error("n is too small")')).toEqual({ type: 'SANDBOX_ERROR', message: 'n is too small' });
    expect(await failure('for (;;) {}', 300)).toEqual({ type: 'TOOL_TIMEOUT', message: 'Tool calc: exceeded its timeout of 300 ms' });
    expect(await failure('return "x".repeat(5000);')).toEqual({ type: 'SANDBOX_OUTPUT_LIMIT', message: 'Tool calc: the result exceeds the limit of 4096 bytes' });
    // memory_mb above SANDBOX_MAX_MEMORY_MB is lowered to it.
    expect(await failure('const a = []; for (;;) a.push({ a: [1, 2, 3] });', 60000, { memory_mb: 100000 })).toEqual({ type: 'SANDBOX_MEMORY_LIMIT', message: 'Tool calc: exceeded its memory limit of 64 MB' });
  });
});

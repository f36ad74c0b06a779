// Before authentication, a request costs the API almost nothing: no body is inflated, read or
// parsed before the caller is authenticated and authorised for the route (and, for an import, has
// taken an import slot); the HTTP server cuts slow requests and caps connections per address.
// Run against the real API process (api/server.ts), whose memory is read from /proc.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { acquireImportLock, type ImportLock } from '../../core/project-io/import-lock';
import { IMPORT_LIMITS } from '../../core/project-io/limits';
import { createProject } from '../../core/tenancy/accounts';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { startFakeOpenAI, type FakeLlmServer } from '../support/fake-openai';
import { openStream } from '../integration/chat-completion/sse-client';
import { client } from '../support/http';
import { eventually } from '../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

const REQUEST_TIMEOUT_MS = 1500;
const HEADERS_TIMEOUT_MS = 1000;
const CONNECTIONS_PER_ADDRESS = 4;

let stack: TestStack;
let api: ApiProcess;
let t: SeededTenant;
let port: number;
let openai: FakeLlmServer;
const OPENAI_KEY = 'sk-openai-request-bodies';

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: OPENAI_KEY });
  stack = await startTestStack({ allowPrivate: { llm: [openai.baseURL] } });
  api = await startApiProcess(stack.config, {
    HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS_PER_ADDRESS),
  });
  port = Number(new URL(api.baseUrl).port);
  t = await seedTenant(stack.ctx);
  const put = await client(stack.baseUrl).put(`/api/projects/${t.projectId}/llm-credentials/openai`, {
    key: t.adminKey,
    json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL },
  });
  expect(put.status).toBe(201);
}, 120_000);
afterAll(async () => {
  await api?.proc.stop();
  await Promise.all([stack?.close(), openai?.close()]);
});

const MB = 1024 * 1024;

/** `[{},{},…]`: tiny compressed, and millions of objects once parsed. */
function jsonBomb(inflatedBytes: number): Buffer {
  const count = Math.floor((inflatedBytes - 2) / 3);
  return gzipSync(Buffer.from(`[${'{},'.repeat(count - 1)}{}]`), { level: 9 });
}

/** The API process's resident memory now and its peak since the last reset, in bytes. */
function memory(): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${api.proc.child.pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** How much the API's peak memory grew above what it held before `run` (the kernel's high-water mark, reset first). */
async function peakGrowth(run: () => Promise<void>): Promise<number> {
  const before = memory().rss;
  writeFileSync(`/proc/${api.proc.child.pid}/clear_refs`, '5');
  await run();
  return memory().peak - before;
}

const importPath = () => `/api/projects/${t.projectId}/project-io/import`;

async function postGzip(path: string, body: Buffer, key?: string) {
  return client(api.baseUrl).post(path, {
    ...(key ? { key } : {}),
    raw: body,
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  });
}

interface RawExchange {
  socket: Socket;
  /** Everything the server sent, once it closed the connection or answered. */
  answered: Promise<string>;
  closed: Promise<void>;
}

/** A raw HTTP/1.1 exchange: the request head is sent as given, the body is left to the caller. */
function rawRequest(head: string, localAddress?: string): RawExchange {
  const socket = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
  socket.on('error', () => undefined);
  let received = '';
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve(received);
    });
    void closed.then(() => resolve(received));
  });
  socket.write(head);
  return { socket, answered, closed };
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);

describe('request bodies are read only for a caller allowed to send them', () => {
  const bomb = jsonBomb(IMPORT_LIMITS.requestBodyBytes - 1024);

  it('answers an anonymous 60 MB gzip JSON bomb with a 4xx without its memory growing', async () => {
    expect(bomb.length).toBeLessThan(100 * 1024);
    // The same request once, so code loaded on first use is not counted.
    await postGzip(importPath(), jsonBomb(64 * 1024));
    let status = 0;
    const growth = await peakGrowth(async () => {
      status = (await postGzip(importPath(), bomb)).status;
    });
    expect(status).toBe(401);
    expect(growth).toBeLessThan(16 * MB);
  });

  it('answers the bomb from a key without the import permission, or with it, without inflating it', async () => {
    const reader = await t.keyWith(['project:export']);
    await postGzip(importPath(), jsonBomb(64 * 1024), reader);
    let statuses: number[] = [];
    const growth = await peakGrowth(async () => {
      statuses = [(await postGzip(importPath(), bomb, reader)).status, (await postGzip(importPath(), bomb, t.adminKey)).status];
    });
    expect(statuses).toEqual([403, 415]);
    expect(growth).toBeLessThan(16 * MB);
  });

  it('refuses a compressed body on any route with 415 in the envelope', async () => {
    const res = await postGzip(`/api/projects/${t.projectId}/agents`, gzipSync(Buffer.from(JSON.stringify({ name: 'Gz' }))), t.adminKey);
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ success: false, error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
  });

  it('answers 401 to an anonymous upload without waiting for its body', async () => {
    const exchange = rawRequest(
      `POST ${importPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${50 * MB}\r\n\r\n{"files":`,
    );
    const response = await exchange.answered;
    exchange.socket.destroy();
    expect(statusOf(response)).toBe(401);
  });

  it('answers 409 to an import while the project is being imported, without waiting for its body', async () => {
    const lock = await acquireImportLock(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
    try {
      const exchange = rawRequest(
        `POST ${importPath()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${50 * MB}\r\n\r\n{"files":`,
      );
      const response = await exchange.answered;
      exchange.socket.destroy();
      expect(statusOf(response)).toBe(409);
    } finally {
      await lock.release();
    }
  });

  it('lets a tenant run only a few imports at once, across its projects', async () => {
    const projects = await Promise.all(
      Array.from({ length: IMPORT_LIMITS.importsPerTenant + 1 }, (_, i) => createProject(stack.ctx.models, t.tenantId, { name: `Busy ${i}` })),
    );
    const locks: ImportLock[] = [];
    try {
      for (const project of projects.slice(1)) locks.push(await acquireImportLock(stack.ctx.models, { tenantId: t.tenantId, projectId: project._id }));
      const res = await client(api.baseUrl).post(`/api/projects/${projects[0]!._id}/project-io/import`, { key: t.adminKey, json: { files: {} } });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ success: false, error: { code: 'CONFLICT' } });
    } finally {
      await Promise.all(locks.map((lock) => lock.release()));
    }
    const free = await client(api.baseUrl).post(`/api/projects/${projects[0]!._id}/project-io/import`, { key: t.adminKey, json: { files: {} } });
    expect(free.status).toBe(200);
  });

  it('refuses an import body holding far more JSON objects and arrays than an import needs (413), before parsing it', async () => {
    const body = `{"files":{},"padding":[${'{},'.repeat(IMPORT_LIMITS.requestBodyContainers)}{}]}`;
    const res = await client(api.baseUrl).post(importPath(), { key: t.adminKey, raw: body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body holds more than 1000 JSON objects and arrays' } });
  });

  it('reads at most 16 KB of an anonymous body: a sign-in, a provider webhook', async () => {
    const exchange = rawRequest(`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${512 * 1024}\r\n\r\n{"email":"`);
    const response = await exchange.answered;
    exchange.socket.destroy();
    expect(statusOf(response)).toBe(413);
    expect(response).toContain('PAYLOAD_TOO_LARGE');
  });

  it('reads a callback body over 16 KB only for a callback id that exists', async () => {
    const exchange = rawRequest(`POST /api/v1/callbacks/cb_nosuchcallback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${512 * 1024}\r\n\r\n{"a":"`);
    const response = await exchange.answered;
    exchange.socket.destroy();
    expect(statusOf(response)).toBe(404);
  });

  it('refuses a tenant creation without the operator token before reading its body', async () => {
    const exchange = rawRequest(`POST /api/admin/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${512 * 1024}\r\n\r\n{"name":"`);
    const response = await exchange.answered;
    exchange.socket.destroy();
    // 401, or 503 where this API process has no PLATFORM_ADMIN_TOKEN: either way not waiting for the body (408).
    expect([401, 503]).toContain(statusOf(response));
  });

  it('stops reading a body at the 1 MB limit of an ordinary route', async () => {
    const exchange = rawRequest(
      `POST /api/projects/${t.projectId}/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminKey}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    // 2 MB of one JSON string, then the connection is held open: the answer may not wait for the end.
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    exchange.socket.write(`1\r\n"\r\n`);
    for (let i = 0; i < 32; i++) exchange.socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString('latin1')}\r\n`);
    const response = await exchange.answered;
    exchange.socket.destroy();
    expect(statusOf(response)).toBe(413);
    expect(response).toContain('PAYLOAD_TOO_LARGE');
  });
});

describe('the HTTP server bounds how long and how many connections a client holds', () => {
  /** Writes `piece(n)` every 100 ms (at most 400 pieces) after `head` until the server answers and closes; returns the answer and how many pieces went. */
  async function trickle(head: string, piece: (n: number) => string): Promise<{ response: string; sent: number }> {
    const exchange = rawRequest(head);
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < 400 && !exchange.socket.destroyed) exchange.socket.write(piece(sent++));
    }, 100);
    const response = await exchange.answered;
    await exchange.closed;
    clearInterval(timer);
    return { response, sent };
  }

  it('cuts a request whose body trickles in at the request timeout (408)', async () => {
    // One byte every 100 ms: the whole body would take 40 s, far beyond the timeout.
    const { response, sent } = await trickle(`POST /api/v1/callbacks/cb_slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n`, (n) =>
      n === 0 ? '{' : ' ',
    );
    expect(sent).toBeLessThan(400);
    expect(statusOf(response)).toBe(408);
  });

  it('cuts a request whose headers trickle in at the headers timeout (408)', async () => {
    const { response, sent } = await trickle('GET /healthz HTTP/1.1\r\nHost: x\r\n', (n) => `X-${n}: y\r\n`);
    expect(sent).toBeLessThan(400);
    expect(statusOf(response)).toBe(408);
  });

  it('closes a connection beyond the per-address cap at once, and takes new ones when others end', async () => {
    // Loopback addresses of their own, so that no other connection of this test counts.
    const [busy, other] = ['127.0.0.2', '127.0.0.3'];
    const open: Socket[] = [];
    for (let i = 0; i < CONNECTIONS_PER_ADDRESS; i++) {
      const socket = connect({ port, host: '127.0.0.1', localAddress: busy });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      open.push(socket);
    }
    const healthz = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    try {
      const extra = rawRequest(healthz, busy);
      const refused = await extra.answered;
      await extra.closed;
      expect(refused).toBe('');
      // Another address is not held up.
      expect(statusOf(await rawRequest(healthz, other).answered)).toBe(200);
      // The held connections are all still served.
      open[0]!.write(healthz);
      expect(statusOf(await new Promise<string>((resolve) => open[0]!.once('data', (d: Buffer) => resolve(d.toString('latin1')))))).toBe(200);
    } finally {
      for (const socket of open) socket.destroy();
    }
    const again = await eventually(
      () => rawRequest(healthz, busy).answered,
      (response) => response !== '',
    );
    expect(statusOf(again)).toBe(200);
  });

  it('lets a response stream on past the request timeout: it bounds receiving the request only', async () => {
    const words = Array.from({ length: 20 }, (_, i) => `word${i}`);
    // 20 chunks 200 ms apart: the stream lasts well beyond the 1.5 s request timeout.
    openai.script({ text: words.join(' '), chunkDelayMs: 200 });
    const res = await openStream(api.baseUrl, {
      key: t.adminKey,
      body: { projectId: t.projectId, messages: [{ role: 'user', content: 'Tell me a long story' }], modelId: 'gpt-4o-mini' },
    });
    expect(res.status).toBe(200);
    expect(res.ended).toBe(true);
    expect(res.events.at(-1)?.event).toBe('complete');
    expect(res.events.at(-1)!.at).toBeGreaterThan(REQUEST_TIMEOUT_MS);
  });

  it('keeps an idle kept-alive connection past the request timeout', async () => {
    const exchange = rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(statusOf(await exchange.answered)).toBe(200);
    await new Promise<void>((resolve) => setTimeout(resolve, REQUEST_TIMEOUT_MS * 2));
    expect(exchange.socket.destroyed).toBe(false);
    exchange.socket.destroy();
  });
});

// Hostile Python in a code tool: a tenant's code runs on our workers, so it must not reach the
// network, the host's files, the worker's environment or processes, or the JavaScript host that
// runs Pyodide, and no call may outlive its time, memory or output limits. Each hostile call fails
// on its own, and the engine goes on serving the next call. The last tests probe the child's
// boundary itself with a plain Node script, below anything Python-specific.
import { createServer, type Server, type Socket } from 'node:net';
import { type AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPythonEngine, isolatedCommand, prepareStage, removeStage, spawnIsolated } from '../../activities/tools/sandbox/python';
import { type SandboxEngine, type SandboxRun } from '../../activities/tools/sandbox/engine';

jest.setTimeout(240_000);

const REPO_FILE = path.resolve(__dirname, '..', '..', 'package.json');

let engine: SandboxEngine;
let listener: Server;
let port: number;
let connections = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  listener = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as AddressInfo).port;
  // Something the worker's environment holds that the code must not see.
  process.env.SANDBOX_PROBE_SECRET = 'worker-only-value';
  engine = createPythonEngine({ warm: 1 });
});

afterAll(async () => {
  delete process.env.SANDBOX_PROBE_SECRET;
  await engine.close();
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => listener.close(() => resolve()));
});

function run(code: string, more: Partial<SandboxRun> = {}) {
  return engine.run({ code, entrypoint: null, params: {}, timeoutMs: 20_000, memoryMb: 64, maxOutputBytes: 64 * 1024, memory: null, ...more });
}

async function expectHealthy(): Promise<void> {
  expect(await run('return {"still": "serving"}')).toEqual({ ok: true, value: { still: 'serving' }, logs: [] });
}

/** Python that tries each attempt and says, per name, whether it got through or what stopped it. */
function attempts(lines: Record<string, string>): string {
  const body = Object.entries(lines).flatMap(([name, statement]) => [
    'try:',
    `    got = ${statement}`,
    `    out[${JSON.stringify(name)}] = "reached: " + repr(got)[:80]`,
    'except BaseException as err:',
    `    out[${JSON.stringify(name)}] = "refused: " + type(err).__name__`,
  ]);
  return ['out = {}', ...body, 'return out'].join('\n');
}

function refusedAll(value: unknown): void {
  const results = value as Record<string, string>;
  for (const [name, result] of Object.entries(results)) expect(`${name} ${result}`).toMatch(new RegExp(`^${name} refused: `));
}

it('an infinite loop is stopped at its deadline', async () => {
  const out = await run('def main(params):\n    while True:\n        pass\n', { timeoutMs: 1000 });
  expect(out).toMatchObject({ ok: false, kind: 'timeout', message: 'the code ran longer than 1000 ms' });
  await expectHealthy();
});

it('a loop in one call does not hold up another call running beside it', async () => {
  const [loop, other] = await Promise.all([run('while True: pass', { timeoutMs: 3000 }), run('return {"beside": True}')]);
  expect(loop).toMatchObject({ ok: false, kind: 'timeout' });
  expect(other).toEqual({ ok: true, value: { beside: true }, logs: [] });
});

it('a memory bomb is stopped past its memory, growing slowly or all at once', async () => {
  const slow = await run('blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 20))\n', { memoryMb: 64 });
  expect(slow).toMatchObject({ ok: false, kind: 'memory', message: 'the code used more than 64 MB of memory' });
  const sudden = await run('s = "x" * (1 << 30)\nreturn len(s)', { memoryMb: 64 });
  expect(sudden).toMatchObject({ ok: false, kind: 'memory' });
  await expectHealthy();
});

it("the code sees none of the worker's environment", async () => {
  const out = await run('import os\nreturn {"environ": dict(os.environ), "secret": os.getenv("SANDBOX_PROBE_SECRET")}');
  expect(out).toEqual({ ok: true, value: { environ: {}, secret: null }, logs: [] });
});

it("the host's files cannot be read", async () => {
  const out = await run(
    attempts({
      passwd: 'open("/etc/passwd").read()',
      repo: `open(${JSON.stringify(REPO_FILE)}).read()`,
      environ: 'open("/proc/self/environ").read()',
      listing: '[n for n in __import__("os").listdir("/") if n in ("etc", "usr", "work", "root")] or 1/0',
    }),
  );
  expect(out.ok).toBe(true);
  refusedAll(out.ok && out.value);
  await expectHealthy();
});

it('no connection leaves the sandbox, to this host or outside', async () => {
  const before = connections;
  const out = await run(
    attempts({
      loopback: `__import__("socket").create_connection(("127.0.0.1", ${port}), timeout=3)`,
      outside: '__import__("socket").create_connection(("1.1.1.1", 80), timeout=3)',
      // Names resolve to placeholder addresses inside Pyodide (no lookup leaves it); the connection fails.
      byName: '__import__("socket").create_connection(("example.com", 80), timeout=3)',
      urllib: `__import__("urllib.request").request.urlopen("http://127.0.0.1:${port}/", timeout=3)`,
    }),
  );
  expect(out.ok).toBe(true);
  refusedAll(out.ok && out.value);
  expect(connections).toBe(before);
  await expectHealthy();
});

it('Python finds no way into the JavaScript host: no process, no require, no eval', async () => {
  const out = await run(
    attempts({
      js: '__import__("js").process',
      pyodide_js: '__import__("pyodide_js")._module',
      run_js: '__import__("pyodide.code").code.run_js("process.env")',
      ffi: '__import__("pyodide.ffi").ffi.to_js({})',
      // Undo the import guard and go through the interpreter's built-in bridge: a fresh JavaScript
      // object's constructor chain ends at Function, which may not compile strings here.
      core: '(__import__("sys").meta_path.pop(0), __import__("_pyodide_core").to_js({}).constructor.constructor("return process")())',
      finder: '[o for o in __import__("gc").get_objects() if type(o).__name__ == "JsFinder"][0].jsproxies["js"]',
    }),
  );
  expect(out.ok).toBe(true);
  refusedAll(out.ok && out.value);
  await expectHealthy();
});

it('no package can be loaded', async () => {
  const out = await run(attempts({ micropip: '__import__("micropip")', numpy: '__import__("numpy")' }));
  expect(out.ok).toBe(true);
  refusedAll(out.ok && out.value);
});

it('huge output fails its call: printed without end, or returned', async () => {
  const printed = await run('while True:\n    print("x" * 1000)\n', { maxOutputBytes: 64 * 1024 });
  expect(printed).toMatchObject({ ok: false, kind: 'output' });
  expect(printed.logs.join('\n').length).toBeLessThanOrEqual(64 * 1024);
  const returned = await run('return {"blob": "y" * (1 << 20)}', { maxOutputBytes: 64 * 1024 });
  expect(returned).toMatchObject({ ok: false, kind: 'output' });
  await expectHealthy();
});

describe('where the network cannot be cut off, Python tools are unavailable, not unisolated', () => {
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'no-namespaces-'));
    fs.chmodSync(dir, 0o755);
    // What unshare says on a host that refuses user namespaces.
    fs.writeFileSync(path.join(dir, 'unshare'), '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n', { mode: 0o755 });
  });

  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['refuses namespaces', () => path.join(dir, 'unshare'), /could not start: unshare: unshare failed: Operation not permitted .*SANDBOX_PYTHON_WITHOUT_NAMESPACES/],
    ['has no unshare', () => path.join(dir, 'missing'), /needs `unshare`.*not installed.*SANDBOX_PYTHON_WITHOUT_NAMESPACES/],
  ])('a host that %s', async (_case, unshare, message) => {
    const closed = createPythonEngine({ warm: 0, unshare: unshare() });
    try {
      const out = await closed.run({ code: 'return {"ran": True}', entrypoint: null, params: {}, timeoutMs: 5000, memoryMb: 64, maxOutputBytes: 1024, memory: null });
      expect(out).toMatchObject({ ok: false, kind: 'unavailable' });
      expect(out.ok === false && out.message).toMatch(message);
    } finally {
      await closed.close();
    }
  });
});

describe("the child's boundary, probed with plain Node", () => {
  let stage: string;

  beforeAll(() => {
    stage = prepareStage();
    fs.writeFileSync(
      path.join(stage, 'probe.mjs'),
      `import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
const [file, port, pid] = process.argv.slice(2);
const out = { env: Object.keys(process.env) };
const attempt = async (name, f) => { try { await f(); out[name] = 'reached'; } catch (err) { out[name] = err.code || err.name; } };
await attempt('read', () => fs.readFileSync(file));
await attempt('write', () => fs.writeFileSync('/tmp/sandbox-probe-' + process.pid, 'x'));
await attempt('spawn', async () => (await import('node:child_process')).execFileSync('/bin/true'));
await attempt('eval', () => new Function('return process')());
await attempt('signal', () => process.kill(Number(pid), 0));
await attempt('connect', () => new Promise((resolve, reject) => {
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.on('connect', () => { socket.destroy(); resolve(); });
  socket.on('error', reject);
}));
process.stdout.write(JSON.stringify(out));
`,
      { mode: 0o644 },
    );
  });

  afterAll(() => {
    removeStage(stage);
  });

  async function probe(namespaces: boolean): Promise<Record<string, unknown>> {
    const cmd = isolatedCommand(stage, 'probe.mjs', { namespaces, heapMb: 64, args: [REPO_FILE, String(port), String(process.pid)] });
    if ('unavailable' in cmd) throw new Error(cmd.unavailable);
    const child = spawnIsolated(cmd, stage);
    child.stdin!.end();
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  it('has no environment, reads only its stage, writes nothing, starts nothing, compiles no strings, sees no other process and no network', async () => {
    const before = connections;
    const out = await probe(true);
    expect(out).toEqual({
      env: [],
      read: 'ERR_ACCESS_DENIED',
      write: 'ERR_ACCESS_DENIED',
      spawn: 'ERR_ACCESS_DENIED',
      eval: 'EvalError',
      signal: 'ESRCH',
      connect: 'ENETUNREACH',
    });
    expect(connections).toBe(before);
  });

  it('the network namespace is what cuts the network off: without it the same probe connects', async () => {
    const before = connections;
    const out = await probe(false);
    expect(out.connect).toBe('reached');
    expect(connections).toBe(before + 1);
  });
});

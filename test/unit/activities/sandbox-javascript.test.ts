// The JavaScript sandbox engine on its own: ABL's calling conventions, the limits (time, memory,
// stack, output), the memory-store helpers through the engine's MemoryBridge, and a pool whose
// threads a hostile call can occupy but not block for other calls.
import { createJavaScriptEngine } from '../../../activities/tools/sandbox/javascript';
import { type MemoryBridge, type SandboxEngine, type SandboxRun } from '../../../activities/tools/sandbox/engine';
import { type Json } from '../../../abl/ir';

let engine: SandboxEngine;
beforeAll(() => {
  engine = createJavaScriptEngine({ threads: 2 });
});
afterAll(async () => {
  await engine.close();
});

const run = (code: string, more: Partial<SandboxRun> = {}) =>
  engine.run({ code, entrypoint: null, params: { city: 'Paris', n: 2 }, timeoutMs: 5000, memoryMb: 32, maxOutputBytes: 64 * 1024, memory: null, ...more });

describe('calling convention', () => {
  it('calls main(params) when the code defines it', async () => {
    expect(await run('function main(params) { return { c: params.city.toUpperCase() }; }')).toEqual({ ok: true, value: { c: 'PARIS' }, logs: [] });
  });
  it('prefers main over the entrypoint', async () => {
    expect(await run('function main() { return "main"; }\nfunction other() { return "other"; }', { entrypoint: 'other' })).toMatchObject({ ok: true, value: 'main' });
  });
  it('calls the entrypoint when there is no main', async () => {
    expect(await run('const handler = (p) => p.n + 1;', { entrypoint: 'handler' })).toMatchObject({ ok: true, value: 3 });
  });
  it('runs a bare body with the parameters as locals and as params', async () => {
    expect(await run('const city = "Rome"; return [city, n, params.city];')).toMatchObject({ ok: true, value: ['Rome', 2, 'Paris'] });
  });
  it('waits for an async main', async () => {
    expect(await run('async function main(p) { const x = await Promise.resolve(p.n); return x * 10; }')).toMatchObject({ ok: true, value: 20 });
  });
  it('gives undefined as null and keeps console lines', async () => {
    expect(await run('console.log("a", { b: 1 }); console.error("c");')).toEqual({ ok: true, value: null, logs: ['log a {"b":1}', 'error c'] });
  });
  it('hands back an exception\'s message, and a rejected promise\'s', async () => {
    expect(await run('throw new Error("city not found")')).toMatchObject({ ok: false, kind: 'error', message: 'city not found' });
    expect(await run('async function main() { throw new TypeError("bad input"); }')).toMatchObject({ ok: false, kind: 'error', message: 'bad input' });
    expect(await run('throw "plain"')).toMatchObject({ ok: false, kind: 'error', message: 'plain' });
  });
  it('reports a syntax error and a promise that never settles', async () => {
    expect(await run('function main( {')).toMatchObject({ ok: false, kind: 'error' });
    expect(await run('function main() { return new Promise(() => {}); }')).toMatchObject({ ok: false, kind: 'error', message: 'the promise the code returned never settled' });
  });
  it('refuses a run without code and an entrypoint that is not a name', async () => {
    expect(await engine.run({ code: null, entrypoint: 'main', params: {}, timeoutMs: 1000, memoryMb: 16, maxOutputBytes: 1000, memory: null })).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(await run('function main() {}', { entrypoint: 'a; b' })).toMatchObject({ ok: false, kind: 'error' });
  });
});

describe('limits', () => {
  it('stops an infinite loop at the timeout', async () => {
    expect(await run('for (;;) {}', { timeoutMs: 300 })).toMatchObject({ ok: false, kind: 'timeout', message: 'exceeded its timeout of 300 ms' });
  });
  it('stops allocation at the memory limit', async () => {
    expect(await run('const a = []; for (;;) a.push({ a: 1, b: [1, 2, 3] });', { memoryMb: 8, timeoutMs: 60000 })).toMatchObject({ ok: false, kind: 'memory', message: 'exceeded its memory limit of 8 MB' });
  });
  it('fails deep recursion with a stack overflow', async () => {
    expect(await run('function f() { return f() + 1; } return f();')).toMatchObject({ ok: false, kind: 'error', message: 'InternalError: stack overflow' });
  });
  it('refuses a result or console output over maxOutputBytes', async () => {
    expect(await run('return "x".repeat(2000);', { maxOutputBytes: 1000 })).toMatchObject({ ok: false, kind: 'output' });
    expect(await run('return "é".repeat(600);', { maxOutputBytes: 1000 })).toMatchObject({ ok: false, kind: 'output' });
    expect(await run('for (;;) console.log("y".repeat(100));', { maxOutputBytes: 1000 })).toMatchObject({ ok: false, kind: 'output', message: 'console output exceeds the limit of 1000 bytes' });
  });
  it('gives each call a fresh environment', async () => {
    expect(await run('globalThis.kept = 1; Object.prototype.leak = 1; return 1;')).toMatchObject({ ok: true });
    expect(await run('return [typeof kept, typeof ({}).leak];')).toMatchObject({ ok: true, value: ['undefined', 'undefined'] });
  });
});

describe('memory helpers', () => {
  function recordingBridge(answers: Record<string, Json | Error>) {
    const calls: [string, string, Json | undefined][] = [];
    const bridge: MemoryBridge = {
      async call(action, name, content) {
        calls.push([action, name, content]);
        const answer = answers[action];
        if (answer instanceof Error) throw answer;
        return answer ?? null;
      },
    };
    return { calls, bridge };
  }

  it('calls the bridge, awaited or not', async () => {
    const { calls, bridge } = recordingBridge({ get: { text: 'hi' }, set: null, delete: { deleted: true } });
    const outcome = await run(
      'async function main() { memory.set_content("s", { a: 1 }); const plain = memory.get_content("s"); const awaited = await memory.get_content("s"); return [plain, awaited, memory.delete_content("s")]; }',
      { memory: bridge },
    );
    expect(outcome).toMatchObject({ ok: true, value: [{ text: 'hi' }, { text: 'hi' }, { deleted: true }] });
    expect(calls).toEqual([['set', 's', { a: 1 }], ['get', 's', undefined], ['get', 's', undefined], ['delete', 's', undefined]]);
  });
  it('raises the bridge\'s error in the code', async () => {
    const { bridge } = recordingBridge({ get: new Error('Memory store not found') });
    expect(await run('try { memory.get_content("s"); } catch (e) { return e.message; }', { memory: bridge })).toMatchObject({ ok: true, value: 'Memory store not found' });
    expect(await run('return memory.get_content("s");', { memory: bridge })).toMatchObject({ ok: false, kind: 'error', message: 'Memory store not found' });
  });
  it('says memory stores are not available without a bridge', async () => {
    expect(await run('return memory.get_content("s");')).toMatchObject({ ok: false, kind: 'error', message: 'memory stores are not available here' });
  });
  it('stops a call whose bridge does not answer before the deadline', async () => {
    const bridge: MemoryBridge = { call: () => new Promise(() => undefined) };
    expect(await run('for (;;) { try { memory.get_content("s"); } catch (e) {} }', { memory: bridge, timeoutMs: 400 })).toMatchObject({ ok: false, kind: 'timeout' });
  });
});

describe('pool', () => {
  it('answers other calls while a thread is busy with a loop', async () => {
    const order: string[] = [];
    const loop = run('for (;;) {}', { timeoutMs: 3000 }).then((o) => (order.push('loop'), o));
    const quick = run('return 1;').then((o) => (order.push('quick'), o));
    expect(await quick).toMatchObject({ ok: true, value: 1 });
    expect(await loop).toMatchObject({ ok: false, kind: 'timeout' });
    expect(order).toEqual(['quick', 'loop']);
  });
  it('fails a call that finds no free thread within its timeout, and serves the next one', async () => {
    const single = createJavaScriptEngine({ threads: 1 });
    try {
      const base = { entrypoint: null, params: {}, memoryMb: 16, maxOutputBytes: 1000, memory: null };
      const busy = single.run({ ...base, code: 'for (;;) {}', timeoutMs: 2000 });
      const waiting = await single.run({ ...base, code: 'return 1;', timeoutMs: 200 });
      expect(waiting).toMatchObject({ ok: false, kind: 'timeout', message: expect.stringContaining('waiting for a free sandbox thread') });
      expect(await busy).toMatchObject({ ok: false, kind: 'timeout' });
      expect(await single.run({ ...base, code: 'return 2;', timeoutMs: 5000 })).toMatchObject({ ok: true, value: 2 });
    } finally {
      await single.close();
    }
  });
  it('ends calls still waiting when the engine closes', async () => {
    const closing = createJavaScriptEngine({ threads: 1 });
    const base = { entrypoint: null, params: {}, memoryMb: 16, maxOutputBytes: 1000, memory: null, timeoutMs: 5000 };
    const running = closing.run({ ...base, code: 'for (;;) {}' });
    const queued = closing.run({ ...base, code: 'return 1;' });
    await closing.close();
    expect(await running).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(await queued).toMatchObject({ ok: false, kind: 'unavailable' });
  });
});

describe('limits too small to start', () => {
  it('says which limit stopped a call that could not even begin', async () => {
    expect(await run('return 1;', { timeoutMs: 1 })).toMatchObject({ ok: false, kind: 'timeout' });
  });
});

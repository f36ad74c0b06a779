// The Python sandbox engine as a tool author sees it: ABL's calling convention (main(params), then
// the entrypoint, else a function body with the params as locals), results, exceptions as the
// agent's error message, console output, and the memory-store helpers through a bridge. Each call
// runs in a real sandbox child (Pyodide in its own process).
import { createPythonEngine } from '../../../activities/tools/sandbox/python';
import { type MemoryBridge, type SandboxEngine, type SandboxRun } from '../../../activities/tools/sandbox/engine';
import { type Json } from '../../../abl/ir';

jest.setTimeout(180_000);

let engine: SandboxEngine;

beforeAll(() => {
  engine = createPythonEngine({ warm: 1 });
});

afterAll(async () => {
  await engine.close();
});

function run(code: string | null, more: Partial<SandboxRun> = {}) {
  return engine.run({ code, entrypoint: null, params: {}, timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 64 * 1024, memory: null, ...more });
}

/** A memory-store bridge kept in a map, as the platform's route keeps stores per session. */
function mapBridge(): MemoryBridge & { calls: string[] } {
  const stores = new Map<string, Json>();
  const calls: string[] = [];
  return {
    calls,
    async call(action, name, content) {
      calls.push(`${action} ${name}`);
      if (name === 'forbidden') throw new Error('Memory store not found');
      if (action === 'get') return stores.get(name) ?? null;
      if (action === 'set') {
        stores.set(name, content ?? null);
        return null;
      }
      const deleted = stores.delete(name);
      return { deleted };
    },
  };
}

describe('calling convention', () => {
  it('calls main(params) when the code defines it, and returns its dict', async () => {
    const out = await run('def main(params):\n    return {"total": params["a"] + params["b"]}\n', { params: { a: 2, b: 40 } });
    expect(out).toEqual({ ok: true, value: { total: 42 }, logs: [] });
  });

  it('calls the entrypoint when there is no main', async () => {
    const out = await run('def handler(params):\n    return {"got": params["q"]}\n\ndef other(params):\n    return {"wrong": True}\n', {
      entrypoint: 'handler',
      params: { q: 'x' },
    });
    expect(out).toEqual({ ok: true, value: { got: 'x' }, logs: [] });
  });

  it('prefers main over the entrypoint', async () => {
    const out = await run('def main(params):\n    return {"by": "main"}\n\ndef handler(params):\n    return {"by": "handler"}\n', { entrypoint: 'handler' });
    expect(out).toMatchObject({ ok: true, value: { by: 'main' } });
  });

  it('runs code without main or entrypoint as a function body with the params as locals', async () => {
    const code = 'import math\nlabel = f"{name}!"\nreturn {"label": label, "root": math.sqrt(n), "keys": sorted(params)}\n';
    const out = await run(code, { params: { name: 'ada', n: 16, 'not an identifier': 1 } });
    expect(out).toEqual({ ok: true, value: { label: 'ada!', root: 4, keys: ['n', 'name', 'not an identifier'] }, logs: [] });
  });

  it('keeps a string literal spanning lines intact in a function body', async () => {
    const out = await run('text = """one\ntwo"""\nreturn {"text": text}\n');
    expect(out).toMatchObject({ ok: true, value: { text: 'one\ntwo' } });
  });

  it('accepts any JSON value as the result, and no return as null', async () => {
    expect(await run('return [1, "two", None, {"three": 3.5}]')).toMatchObject({ ok: true, value: [1, 'two', null, { three: 3.5 }] });
    expect(await run('x = 1')).toMatchObject({ ok: true, value: null });
  });

  it('says an entrypoint the code does not define is missing', async () => {
    const out = await run('def handler(params):\n    return {}\n', { entrypoint: 'missing' });
    expect(out).toMatchObject({ ok: false, kind: 'error', message: "NameError: entrypoint 'missing' is not defined" });
  });

  it('refuses an entrypoint without code', async () => {
    const out = await run(null, { entrypoint: 'handler' });
    expect(out).toMatchObject({ ok: false, kind: 'error' });
    expect(out.ok === false && out.message).toMatch(/needs a code block/);
  });
});

describe('errors and output', () => {
  it("passes an unhandled exception's message on, with the traceback in the logs", async () => {
    const out = await run('def main(params):\n    raise ValueError("bad input")\n');
    expect(out).toMatchObject({ ok: false, kind: 'error', message: 'ValueError: bad input' });
    expect(out.logs.join('\n')).toContain('line 2, in main');
  });

  it('names a syntax error and its line', async () => {
    const out = await run('def main(params):\n    return {\n');
    expect(out).toMatchObject({ ok: false, kind: 'error' });
    expect(out.ok === false && out.message).toMatch(/^SyntaxError: .* \(line 2\)$/);
  });

  it('fails a result that is not JSON', async () => {
    const out = await run('return {"s": {1, 2}}');
    expect(out).toMatchObject({ ok: false, kind: 'error' });
    expect(out.ok === false && out.message).toMatch(/not JSON.*set/);
  });

  it('keeps what the code prints, standard output and error, in order', async () => {
    const out = await run('import sys\nprint("one")\nprint("two", file=sys.stderr)\nprint("three")\nreturn {}');
    expect(out).toEqual({ ok: true, value: {}, logs: ['one', 'two', 'three'] });
  });
});

describe('memory-store helpers', () => {
  it('set, get and delete go through the bridge and back', async () => {
    const bridge = mapBridge();
    const code = [
      'def main(params):',
      '    before = memory.get_content("cart")',
      '    memory.set_content("cart", {"items": [params["item"]], "n": 1})',
      '    after = memory.get_content("cart")',
      '    gone = memory.delete_content("cart")',
      '    again = memory.delete_content("cart")',
      '    return {"before": before, "after": after, "gone": gone, "again": again, "last": memory.get_content("cart")}',
    ].join('\n');
    const out = await run(code, { params: { item: 'tea' }, memory: bridge });
    expect(out).toEqual({
      ok: true,
      value: { before: null, after: { items: ['tea'], n: 1 }, gone: { deleted: true }, again: { deleted: false }, last: null },
      logs: [],
    });
    expect(bridge.calls).toEqual(['get cart', 'set cart', 'get cart', 'delete cart', 'delete cart', 'get cart']);
  });

  it("raises the bridge's refusal as MemoryStoreError, which the code may catch", async () => {
    const code = [
      'try:',
      '    memory.get_content("forbidden")',
      'except Exception as err:',
      '    return {"caught": f"{type(err).__name__}: {err}"}',
    ].join('\n');
    const out = await run(code, { memory: mapBridge() });
    expect(out).toMatchObject({ ok: true, value: { caught: 'MemoryStoreError: Memory store not found' } });
  });

  it('set_content takes only a dict', async () => {
    const bridge = mapBridge();
    const out = await run('memory.set_content("cart", [1, 2])', { memory: bridge });
    expect(out).toMatchObject({ ok: false, kind: 'error', message: 'TypeError: memory.set_content needs a dict' });
    expect(bridge.calls).toEqual([]);
  });

  it('says memory stores are not available where there is no bridge', async () => {
    const out = await run('return memory.get_content("cart")', { memory: null });
    expect(out).toMatchObject({ ok: false, kind: 'error', message: 'MemoryStoreError: memory stores are not available here' });
  });
});

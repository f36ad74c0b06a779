// Tool response bodies are read up to TOOL_RESPONSE_MAX_BYTES and no further (a longer body fails
// the call, final), and tool results are cut to TOOL_RESULT_HISTORY_MAX_BYTES before they enter a
// session, keeping their shape and marking every cut.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { compileProject, type Json, type ToolIR } from '../../../abl';
import { runHttpTool } from '../../../activities/tools/http-tool';
import { readBodyCapped } from '../../../activities/tools/response-body';
import { capToolResult, TRUNCATED_KEYS_KEY, TRUNCATION_MARKER } from '../../../lib/result-cap';

const sizeOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

describe('reading a tool response body', () => {
  let server: Server;
  let base: string;
  /** How the next request is answered. */
  let answer: (res: ServerResponse) => void = (res) => res.end('{}');

  beforeAll(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  function tool(): ToolIR {
    const out = compileProject([
      { path: 'agents/A.agent.abl', content: `AGENT: A\nGOAL: "g"\nTOOLS:\n  fetch_report() -> object\n    type: http\n    endpoint: "${base}/report"\n    method: GET\n` },
    ]);
    return out.agents.A!.tools[0]!;
  }
  const run = (maxResponseBytes: number) => runHttpTool({ tool: tool(), args: {}, timeoutMs: 5000, secrets: {}, secretDestinations: {} }, { allowPrivate: true, maxResponseBytes });
  const json = (bytes: number) => JSON.stringify({ data: 'x'.repeat(bytes - '{"data":""}'.length) });

  it('accepts a body of exactly the cap and refuses one byte more, whether its length is declared or not', async () => {
    for (const declared of [true, false]) {
      answer = (res) => {
        const body = json(1000);
        res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(body.length) } : {}) });
        // Undeclared: chunked, in pieces, as a streaming server sends it.
        if (declared) res.end(body);
        else {
          res.write(body.slice(0, 600));
          res.end(body.slice(600));
        }
      };
      await expect(run(1000)).resolves.toEqual({ data: expect.any(String) });
      await expect(run(999)).rejects.toMatchObject({ type: 'TOOL_RESPONSE_TOO_LARGE', nonRetryable: true, message: expect.stringContaining('more than 999 bytes') });
    }
  });

  it('stops reading an endless body at the cap and closes the connection', async () => {
    let closedEarly!: (written: number) => void;
    const closed = new Promise<number>((resolve) => (closedEarly = resolve));
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      let written = 0;
      res.on('close', () => {
        if (!res.writableFinished) closedEarly(written);
      });
      const pump = () => {
        // Writes until the socket pushes back, then waits for it to drain: never ends by itself.
        let more = true;
        while (!res.destroyed && more) {
          more = res.write(chunk);
          written += chunk.length;
        }
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    };
    await expect(run(256 * 1024)).rejects.toMatchObject({ type: 'TOOL_RESPONSE_TOO_LARGE' });
    // The server's write loop had no end: only the reader's cancel can have ended it.
    await expect(closed).resolves.toBeGreaterThan(0);
  });

  it('cuts a body at a character boundary', async () => {
    const res = new Response('ab€', { headers: {} });
    // '€' is three bytes: a cap of four keeps 'ab' and half a character, which is dropped.
    await expect(readBodyCapped(res, 4)).resolves.toEqual({ text: 'ab', overflow: true });
    await expect(readBodyCapped(new Response('ab€'), 5)).resolves.toEqual({ text: 'ab€', overflow: false });
  });
});

describe('capping a tool result', () => {
  it('leaves a result within the cap as it is', () => {
    const value = { id: 'INV-1', amount: 12, lines: ['a', 'b'] };
    expect(capToolResult(value, 1024)).toEqual({ value, truncated: false, originalBytes: sizeOf(value) });
  });

  it('keeps the shape and the small fields of a large result and marks what was cut', () => {
    const value = { id: 'INV-1', amount: 12, notes: 'n'.repeat(50_000), lines: Array.from({ length: 2000 }, (_, i) => ({ sku: `S${i}` })) };
    const { value: cut, truncated, originalBytes } = capToolResult(value, 4096);
    expect(truncated).toBe(true);
    expect(originalBytes).toBe(sizeOf(value));
    expect(sizeOf(cut)).toBeLessThanOrEqual(4096);
    const object = cut as { id: string; amount: number; notes: string; lines: Json[] };
    expect(object).toMatchObject({ id: 'INV-1', amount: 12 });
    expect(object.notes).toMatch(/^n+…\[truncated: \d+ more characters\]$/);
    expect(object.lines[0]).toEqual({ sku: 'S0' });
    expect(object.lines[object.lines.length - 1]).toMatch(/^…\[truncated: \d+ more items\]$/);
    expect(JSON.stringify(cut)).not.toContain('n'.repeat(5000));
  });

  it('cuts objects with many keys and plain-text results', () => {
    const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    const cutWide = capToolResult(wide, 2048).value as Record<string, Json>;
    expect(cutWide[TRUNCATED_KEYS_KEY]).toMatch(/^\d+ more keys$/);
    expect(sizeOf(cutWide)).toBeLessThanOrEqual(2048);
    const text = capToolResult('€'.repeat(10_000), 2048).value as string;
    expect(text.startsWith('€€€')).toBe(true);
    expect(text).toContain(TRUNCATION_MARKER);
    expect(sizeOf(text)).toBeLessThanOrEqual(2048);
  });

  it('cuts a deeply nested result too', () => {
    let deep: Json = 'bottom';
    for (let i = 0; i < 2000; i++) deep = [deep];
    const { value, truncated } = capToolResult(deep, 1024);
    expect(truncated).toBe(true);
    expect(sizeOf(value)).toBeLessThanOrEqual(1024);
    expect(JSON.stringify(value)).toContain(TRUNCATION_MARKER);
  });

  it('always fits the cap, and changes only results that do not', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 1024, max: 4096 }), (raw, maxBytes) => {
        const value = JSON.parse(JSON.stringify(raw)) as Json;
        const capped = capToolResult(value, maxBytes);
        expect(sizeOf(capped.value)).toBeLessThanOrEqual(maxBytes);
        if (sizeOf(value) <= maxBytes) expect(capped).toEqual({ value, truncated: false, originalBytes: sizeOf(value) });
        else expect(JSON.stringify(capped.value)).toContain(TRUNCATION_MARKER);
      }),
      { numRuns: 300 },
    );
  });
});

// Hostile tenant code in `type: sandbox` JavaScript tools: an infinite loop, a memory bomb, huge
// output, prototype pollution aimed at the host, and attempts to read the environment, the file
// system or the network. Each fails (or stays inside) its own call while another session's
// sandbox call, made at the same time, succeeds; the worker, in this process, stays healthy and
// its own objects untouched.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { chatOnce, publishAgent } from '../support/agents';
import { startReceiver, type Receiver } from '../support/receiver';
import { sandboxAgent, toolResult } from '../support/sandbox-agents';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let receiver: Receiver;

const GOOD = 'Good';

beforeAll(async () => {
  receiver = await startReceiver();
  // The receiver is reachable for HTTP tools: only the sandbox's own boundary keeps the code from it.
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [receiver.origin] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, GOOD, sandboxAgent(GOOD, {
    signature: 'sum(n: number) -> {total: number}',
    call: 'sum(n = 1000)',
    code: 'let total = 0;\nfor (let i = 1; i <= n; i++) total += i;\nreturn { total: total };',
    respond: 'Total {{out.total}}.',
  }));
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

/** Runs the hostile agent and the good one in two sessions at once; the good one must answer. */
async function alongsideGood(agent: string) {
  const [hostile, good] = await Promise.all([chatOnce(api, t, agent, 'go'), chatOnce(api, t, GOOD, 'go')]);
  expect(good.response).toBe('Total 500500.');
  return hostile;
}

afterEach(async () => {
  // The worker still runs sandbox calls after each hostile one.
  expect((await chatOnce(api, t, GOOD, 'go')).response).toBe('Total 500500.');
});

it('stops an infinite loop at its timeout', async () => {
  await publishAgent(api, t, 'Loop', sandboxAgent('Loop', {
    signature: 'spin() -> {ok: boolean}',
    call: 'spin()',
    binding: ['timeout: 1000'],
    code: 'function main(params) { for (;;) {} }',
    respond: 'Done.',
  }));
  const res = await alongsideGood('Loop');
  expect(res.response).toBe('Failed.');
  expect(toolResult(res.traceEvents)).toMatchObject({ success: false, error: { kind: 'tool_timeout' } });
});

it('stops a memory bomb at its memory limit', async () => {
  await publishAgent(api, t, 'Bomb', sandboxAgent('Bomb', {
    signature: 'grow() -> {ok: boolean}',
    call: 'grow()',
    binding: ['timeout: 60000', 'memory_mb: 16'],
    code: 'const hoard = [];\nfor (;;) hoard.push({ a: 1, b: [1, 2, 3], c: "x" + hoard.length });',
    respond: 'Done.',
  }));
  const res = await alongsideGood('Bomb');
  expect(res.response).toBe('Failed.');
  expect(toolResult(res.traceEvents)).toMatchObject({ success: false, error: { kind: 'tool_error', message: expect.stringContaining('memory limit of 16 MB') } });
});

it('refuses a result or console output beyond the output limit', async () => {
  await publishAgent(api, t, 'Huge', sandboxAgent('Huge', {
    signature: 'huge() -> {s: string}',
    call: 'huge()',
    code: 'return { s: "x".repeat(3 * 1024 * 1024) };',
    respond: 'Done.',
  }));
  await publishAgent(api, t, 'Chatty', sandboxAgent('Chatty', {
    signature: 'chatty() -> {ok: boolean}',
    call: 'chatty()',
    binding: ['timeout: 60000'],
    code: 'for (;;) console.log("y".repeat(10000));',
    respond: 'Done.',
  }));
  const huge = await alongsideGood('Huge');
  expect(huge.response).toBe('Failed.');
  expect(toolResult(huge.traceEvents)).toMatchObject({ success: false, error: { message: expect.stringContaining('the result exceeds the limit of 1048576 bytes') } });
  const chatty = await alongsideGood('Chatty');
  expect(chatty.response).toBe('Failed.');
  expect(toolResult(chatty.traceEvents)).toMatchObject({ success: false, error: { message: expect.stringContaining('console output exceeds the limit of 1048576 bytes') } });
});

it('keeps prototype pollution inside the call: the host and the next call see clean prototypes', async () => {
  await publishAgent(api, t, 'Polluter', sandboxAgent('Polluter', {
    signature: 'pollute() -> {seen: string}',
    call: 'pollute()',
    code: [
      'Object.prototype.polluted = "yes";',
      'Object.prototype.toString = function () { return "owned"; };',
      'Array.prototype.push = function () { return -1; };',
      'JSON.parse = function () { return { owned: true }; };',
      'try { this.constructor.constructor("return this")().polluted2 = "yes"; } catch (e) {}',
      'try { ({}).__proto__.__proto__ = { evil: true }; } catch (e) {}',
      'return { seen: ({}).polluted };',
    ].join('\n'),
    respond: 'Seen {{out.seen}}.',
  }));
  await publishAgent(api, t, 'Inspector', sandboxAgent('Inspector', {
    signature: 'inspect() -> {seen: string}',
    call: 'inspect()',
    code: 'return { seen: typeof ({}).polluted + "," + typeof globalThis.polluted2 + "," + [].push(1) };',
    respond: 'Seen {{out.seen}}.',
  }));
  const res = await alongsideGood('Polluter');
  expect(res.response).toBe('Seen yes.');
  // The host (this process runs the worker) is untouched.
  const plain: Record<string, unknown> = {};
  expect(plain.polluted).toBeUndefined();
  expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
  expect((globalThis as Record<string, unknown>).polluted2).toBeUndefined();
  expect(Object.prototype.toString.call([])).toBe('[object Array]');
  expect([1].push(2)).toBe(2);
  expect(JSON.parse('{"a":1}')).toEqual({ a: 1 });
  // And a fresh environment for the next call.
  expect((await chatOnce(api, t, 'Inspector', 'go')).response).toBe('Seen undefined,undefined,1.');
});

it('gives the code no environment, file system or network', async () => {
  await publishAgent(api, t, 'Prober', sandboxAgent('Prober', {
    signature: 'probe(target: string) -> {tries: string}',
    call: `probe(target = "${receiver.origin}/stolen")`,
    code: [
      'async function main(params) {',
      '  const tries = [];',
      '  const attempt = async (name, f) => { try { const v = await f(); tries.push(name + ":got " + typeof v); } catch (e) { tries.push(name + ":" + e.name); } };',
      '  await attempt("env", () => process.env.ENCRYPTION_KEY);',
      '  await attempt("require", () => require("fs").readFileSync("/etc/passwd", "utf8"));',
      '  await attempt("import", () => import("fs"));',
      '  await attempt("fetch", () => fetch(params.target));',
      '  await attempt("xhr", () => new XMLHttpRequest());',
      '  await attempt("socket", () => new WebSocket(params.target));',
      '  await attempt("ctor", () => this.constructor.constructor("return process")().env);',
      '  await attempt("fn", () => Function("return process.mainModule")());',
      '  return { tries: tries.join(" ") };',
      '}',
    ].join('\n'),
    respond: '{{out.tries}}',
  }));
  const res = await alongsideGood('Prober');
  const tries = res.response.split(' ');
  expect(tries).toHaveLength(8);
  for (const entry of tries) expect(entry).not.toContain(':got');
  expect(receiver.received).toEqual([]);
  expect(res.text).not.toContain(stack.config.ENCRYPTION_KEY!);
});

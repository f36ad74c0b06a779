// `type: sandbox` JavaScript tools run as written in a flow: the three calling conventions, an
// exception's message as the tool error, the timeout failing the call into the step's ON_FAIL,
// nothing of the host visible to the code, and the memory-store helpers reaching
// the API's `POST /api/v1/memory` with a sandbox token issued for the call.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent } from '../../support/agents';
import { sandboxAgent, toolResult } from '../../support/sandbox-agents';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { historyFromJsonObject } from '../../fixtures/histories/history-json';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  // PUBLIC_BASE_URL defaults to this stack's API: the memory helpers call the real route.
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(() => stack.close());

it('calls main(params) when the code defines it, and the flow uses its result', async () => {
  await publishAgent(api, t, 'Shout', sandboxAgent('Shout', {
    signature: 'shout(city: string) -> {c: string}',
    call: 'shout(city = "Paris")',
    code: 'function main(params) {\n  return { c: params.city.toUpperCase() };\n}',
    respond: 'Got {{out.c}}.',
  }));
  const res = await chatOnce(api, t, 'Shout', 'go');
  expect(res.response).toBe('Got PARIS.');
  expect(toolResult(res.traceEvents)).toMatchObject({ tool: 'shout', success: true, output: { c: 'PARIS' } });
  // The run records the patch where the sandbox ran, and replays with today's code.
  const history = await sessionHistory(stack, res.sessionId);
  expect(patchIdsIn(history)).toContain('sandbox-tools-v1');
  await replayWithTodaysCode(history, `session/${res.sessionId}`);
});

it('replays a run recorded before sandbox tools ran, where the call failed at once', async () => {
  // Recorded from commit 2bf8faf: the same agent, whose call failed with "cannot run yet".
  const file = JSON.parse(gunzipSync(readFileSync(join(__dirname, '../../fixtures/sandbox/2bf8faf-sandbox-tool.json.gz'))).toString('utf8')) as { workflowId: string; history: unknown };
  const history = historyFromJsonObject(file.history);
  expect(patchIdsIn(history)).not.toContain('sandbox-tools-v1');
  expect(JSON.stringify(file.history)).not.toContain('runSandboxTool');
  await replayWithTodaysCode(history, file.workflowId);
});

it('runs a bare body with the parameters as locals', async () => {
  await publishAgent(api, t, 'Doubler', sandboxAgent('Doubler', {
    signature: 'double(n: number) -> {n: number}',
    call: 'double(n = 21)',
    code: 'const twice = n * 2;\nreturn { n: twice };',
    respond: 'Got {{out.n}}.',
  }));
  expect((await chatOnce(api, t, 'Doubler', 'go')).response).toBe('Got 42.');
});

it('calls the entrypoint when the code has no main', async () => {
  await publishAgent(api, t, 'Picker', sandboxAgent('Picker', {
    signature: 'pick(city: string) -> {c: string}',
    call: 'pick(city = "Oslo")',
    binding: ['entrypoint: handler'],
    code: 'function handler(params) {\n  return { c: params.city + "!" };\n}',
    respond: 'Got {{out.c}}',
  }));
  expect((await chatOnce(api, t, 'Picker', 'go')).response).toBe('Got Oslo!');
});

it('gives the agent an unhandled exception\'s message as the tool error', async () => {
  await publishAgent(api, t, 'Thrower', sandboxAgent('Thrower', {
    signature: 'find(city: string) -> {c: string}',
    call: 'find(city = "Atlantis")',
    code: 'function main(params) {\n  throw new Error("no such city: " + params.city);\n}',
    respond: 'Got {{out.c}}.',
  }));
  const res = await chatOnce(api, t, 'Thrower', 'go');
  expect(res.response).toBe('Failed.');
  expect(toolResult(res.traceEvents)).toMatchObject({ success: false, error: { kind: 'tool_error', message: 'no such city: Atlantis' } });
});

it('fails a call that runs past its timeout, and the step\'s ON_FAIL runs', async () => {
  await publishAgent(api, t, 'Spinner', sandboxAgent('Spinner', {
    signature: 'spin() -> {ok: boolean}',
    call: 'spin()',
    binding: ['timeout: 500'],
    code: 'function main(params) { while (true) {} }',
    respond: 'Done.',
  }));
  const res = await chatOnce(api, t, 'Spinner', 'go');
  expect(res.response).toBe('Failed.');
  const result = toolResult(res.traceEvents);
  expect(result).toMatchObject({ success: false, error: { kind: 'tool_timeout' } });
  expect(String((result.error as { message: string }).message)).toContain('timeout of 500 ms');
});

it('shows the code nothing of the host: no process, require, Node globals or timers', async () => {
  await publishAgent(api, t, 'Peeker', sandboxAgent('Peeker', {
    signature: 'peek() -> {p: string}',
    call: 'peek()',
    code: [
      'const names = Object.getOwnPropertyNames(globalThis);',
      'return { p: typeof process, r: typeof require, m: typeof module, b: typeof Buffer, f: typeof fetch, s: typeof setTimeout,',
      '  fromFunction: Function("return typeof process")(), names: names };',
    ].join('\n'),
    respond: '{{out.p}} {{out.r}} {{out.m}} {{out.b}} {{out.f}} {{out.s}} {{out.fromFunction}}',
  }));
  const res = await chatOnce(api, t, 'Peeker', 'go');
  expect(res.response).toBe('undefined undefined undefined undefined undefined undefined undefined');
  const names = (toolResult(res.traceEvents).output as { names: string[] }).names;
  for (const hostName of ['process', 'require', 'module', 'Buffer', 'fetch', 'setTimeout', 'setImmediate', 'queueMicrotask', 'WebAssembly', 'global']) {
    expect(names).not.toContain(hostName);
  }
  expect(names).toEqual(expect.arrayContaining(['JSON', 'Math', 'console', 'memory']));
});

it('reaches memory stores through memory.* with a token for this call, awaited or not', async () => {
  await publishAgent(api, t, 'Noter', sandboxAgent('Noter', {
    signature: 'note(text: string) -> {text: string}',
    call: 'note(text = "buy milk")',
    code: [
      'async function main(params) {',
      '  memory.set_content("notes", { text: params.text });',
      '  const plain = memory.get_content("notes");',
      '  const awaited = await memory.get_content("notes");',
      '  const gone = await memory.delete_content("notes");',
      '  const after = memory.get_content("notes");',
      '  return { text: plain.text + "/" + awaited.text, deleted: gone.deleted, after: after };',
      '}',
    ].join('\n'),
    respond: 'Noted {{out.text}} {{out.deleted}} {{out.after}}.',
  }));
  const res = await chatOnce(api, t, 'Noter', 'go');
  expect(toolResult(res.traceEvents)).toMatchObject({ success: true, output: { text: 'buy milk/buy milk', deleted: true, after: null } });
  // The route answered for this session (the token named it), and the deleted store is gone.
  expect(await stack.ctx.models.MemoryStore.countDocuments({ tenantId: t.tenantId, sessionId: res.sessionId })).toBe(0);
});

it('raises an error the code can catch for a helper call without a store name', async () => {
  await publishAgent(api, t, 'Refused', sandboxAgent('Refused', {
    signature: 'look() -> {m: string}',
    call: 'look()',
    code: 'try { memory.get_content(""); } catch (e) { return { m: e.message }; }',
    respond: '{{out.m}}',
  }));
  const res = await chatOnce(api, t, 'Refused', 'go');
  expect(res.response).toBe('memory.get_content needs a memory store name');
});

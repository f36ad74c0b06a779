// A flow that calls a sandboxed code tool which keeps a memory store, end to end: the tool's
// helpers reach the real `POST /api/v1/memory` of the API with the token the runtime issued for the
// call, the store carries the count from one turn to the next, another session starts from nothing,
// and the store is gone once the session completes. The same agent in JavaScript and in Python.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent } from '../../support/agents';

jest.setTimeout(180_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const JS = `      function main(params) {
        const cur = memory.get_content("counter");
        const n = (cur ? cur.n : 0) + 1;
        memory.set_content("counter", { n: n, label: params.label });
        const seen = memory.get_content("counter");
        return { n: seen.n, label: seen.label };
      }`;

const PY = `      def main(params):
          cur = memory.get_content("counter")
          n = (cur["n"] if cur else 0) + 1
          memory.set_content("counter", {"n": n, "label": params["label"]})
          seen = memory.get_content("counter")
          return {"n": seen["n"], "label": seen["label"]}`;

/** Counts visits in a memory store: after the greeting, every message but "stop" calls the tool again. */
const counter = (name: string, runtime: 'javascript' | 'python', code: string) => `AGENT: ${name}
GOAL: "Count visits."
TOOLS:
  bump(label: string) -> {n: number, label: string}
    type: sandbox
    runtime: ${runtime}
    timeout: 20000
    code: |
${code}
FLOW:
  steps: [hello, count, done]
  hello:
    REASONING: false
    RESPOND: "Ready."
    ON_INPUT:
      - ELSE:
        THEN: count
  count:
    REASONING: false
    CALL: bump(label = "visit")
    AS: out
    ON_SUCCESS:
      RESPOND: "Count {{out.n}} ({{out.label}})."
    ON_FAIL:
      RESPOND: "Failed."
      THEN: COMPLETE
    ON_INPUT:
      - IF: input == "stop"
        THEN: done
      - ELSE:
        THEN: count
  done:
    REASONING: false
    RESPOND: "Bye."
    THEN: COMPLETE
`;

beforeAll(async () => {
  // PUBLIC_BASE_URL defaults to this stack's API: the helpers call the real route.
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Js_Counter', counter('Js_Counter', 'javascript', JS));
  await publishAgent(api, t, 'Py_Counter', counter('Py_Counter', 'python', PY));
});
afterAll(() => stack.close());

const send = async (agentId: string, sessionId: string, message: string) => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, sessionId, message } });
  expect(res.status).toBe(200);
  return res.body as { response: string };
};
const storesOf = (sessionId: string) => stack.ctx.models.MemoryStore.find({ tenantId: t.tenantId, sessionId }).lean();

describe.each([
  ['javascript', 'Js_Counter'],
  ['python', 'Py_Counter'],
])('a %s tool keeping a memory store', (_runtime, agentId) => {
  it('carries the store across turns, keeps it to its session, and deletes it when the session ends', async () => {
    const first = await chatOnce(api, t, agentId, 'go');
    // The flow's entry step greets as the session starts; the message then moves it on to the count.
    expect(first.response).toBe('Ready.\n\nCount 1 (visit).');
    expect((await send(agentId, first.sessionId, 'again')).response).toBe('Count 2 (visit).');
    expect((await send(agentId, first.sessionId, 'once more')).response).toBe('Count 3 (visit).');

    const stored = await storesOf(first.sessionId);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ name: 'counter', projectId: t.projectId });
    expect(JSON.parse(stored[0]!.content)).toEqual({ n: 3, label: 'visit' });

    // Another session of the same agent and tenant starts from an empty store.
    const other = await chatOnce(api, t, agentId, 'go');
    expect(other.response).toBe('Ready.\n\nCount 1 (visit).');

    expect((await send(agentId, first.sessionId, 'stop')).response).toBe('Bye.');
    // The end is recorded by the session's last projection write, which deletes its stores.
    const deadline = Date.now() + 30_000;
    while ((await storesOf(first.sessionId)).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await storesOf(first.sessionId)).toHaveLength(0);
    expect(await storesOf(other.sessionId)).toHaveLength(1);
  });
});

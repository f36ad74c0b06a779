// Pinning by reference on the real stack: a session's bundle is named by a content hash of its
// versions; its workflow history carries that hash, never the compiled agents; every
// continue-as-new and delegation child runs the same bundle, even after newer versions exist;
// a worker that does not hold a bundle rebuilds it from MongoDB by hash; the history replays.
import { seedDevProject } from '../../../infra/seed-project';
import { createSessionBundleStore } from '../../../activities/persistence/session-bundles';
import { SESSION_BUNDLE_REF_ENCODING } from '../../../workers/session-bundle-storage';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { decodeEncryptedPayloads } from '../../fixtures/histories/history-json';
import { eventually } from '../../support/eventually';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let sample: SeededTenant;

const speaker = (tag: string) => `AGENT: Pinned
GOAL: "Say which version answers: ${tag} goal."
FLOW:
  entry_point: hello
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "Pinned ${tag}"
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

beforeAll(async () => {
  // Roll over every few turns, so continue-as-new happens within the test.
  stack = await startTestStack({ worker: true, env: { SESSION_MAX_HISTORY_EVENTS: '30' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'bundle-pinning');
  sample = await seedTenant(stack.ctx, 'bundle-sample');
  await seedDevProject(stack.ctx.models, { tenantId: sample.tenantId, projectId: sample.projectId });
  await publishAgent(api, t, 'Pinned', speaker('v1'));
});
afterAll(() => stack.close());

const chat = (owner: SeededTenant, json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, ...json } });
const said = (response: string) => [...new Set(response.split('\n\n'))].join(' | ');

type RawHistory = Awaited<ReturnType<typeof sessionHistory>>;
/** The history with the payload codec's encryption undone, its session bundle still a reference. */
async function rawHistory(workflowId: string, runId?: string): Promise<RawHistory> {
  return decodeEncryptedPayloads(await (await stack.ctx.temporal.client()).workflow.getHandle(workflowId, runId).fetchHistory(), stack.ctx.payloadCodec);
}
/** Every payload of a history with its encoding and text. */
function payloadsOf(history: RawHistory): { encoding: string; text: string }[] {
  const out: { encoding: string; text: string }[] = [];
  const visit = (value: unknown) => {
    if (!value || typeof value !== 'object' || value instanceof Uint8Array) return;
    const v = value as { metadata?: Record<string, Uint8Array>; data?: Uint8Array };
    if (v.metadata?.encoding && v.data) {
      out.push({ encoding: Buffer.from(v.metadata.encoding).toString('utf8'), text: Buffer.from(v.data).toString('utf8') });
      return;
    }
    for (const child of Object.values(value)) visit(child);
  };
  visit(history.events);
  return out;
}
const bundleHashesIn = (history: RawHistory) =>
  payloadsOf(history)
    .filter((p) => p.encoding === SESSION_BUNDLE_REF_ENCODING)
    .map((p) => (JSON.parse(p.text) as { bundleHash: string }).bundleHash);

it('keeps a session on its bundle across continue-as-new after a newer version is saved; history holds only the hash', async () => {
  const first = await chat(t, { message: 'hello' });
  expect(first.status).toBe(200);
  expect(said(first.body.response)).toBe('Pinned v1');
  const sessionId = first.body.sessionId as string;
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
  const firstRun = (await handle.describe()).runId;

  // The first run's history: one bundle reference, and nothing of the compiled agent.
  const history = await rawHistory(`session/${sessionId}`, firstRun);
  const [bundleHash] = bundleHashesIn(history);
  expect(bundleHash).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(payloadsOf(history).some((p) => p.text.includes('v1 goal'))).toBe(false);
  expect(await stack.ctx.models.SessionBundle.countDocuments({ _id: bundleHash, tenantId: t.tenantId, projectId: t.projectId })).toBe(1);

  // A newer version of the agent; the session keeps talking until it has rolled over.
  await api.put(`/api/projects/${t.projectId}/agents/Pinned/dsl`, { key: t.adminKey, json: { dslContent: speaker('v2') } });
  expect((await api.post(`/api/projects/${t.projectId}/agents/Pinned/versions`, { key: t.adminKey, json: {} })).status).toBe(201);
  let rolledOver = false;
  for (let i = 0; i < 12 && !rolledOver; i++) {
    const res = await chat(t, { sessionId, message: `turn ${i}` });
    expect(res.status).toBe(200);
    expect(said(res.body.response)).toBe('Pinned v1');
    rolledOver = (await handle.describe()).runId !== firstRun;
  }
  expect(rolledOver).toBe(true);
  const after = await chat(t, { sessionId, message: 'after the roll-over' });
  expect(said(after.body.response)).toBe('Pinned v1');
  // The new run names the same bundle and loads it by that hash. The session may have rolled over
  // again after that turn: the newest run then records its load in its first workflow task.
  const current = await eventually(() => rawHistory(`session/${sessionId}`), (h) => bundleHashesIn(h).length > 0, 10_000, 100);
  const started = current.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  expect(JSON.parse(Buffer.from(started.data!).toString('utf8')).bundleRef).toEqual({ kind: 'bundle', bundleHash });
  expect(bundleHashesIn(current)).toEqual([bundleHash]);

  // A new session runs the newest version, as a new bundle.
  const fresh = await chat(t, { message: 'hello' });
  expect(said(fresh.body.response)).toBe('Pinned v2');
  expect(bundleHashesIn(await rawHistory(`session/${fresh.body.sessionId}`))).not.toContain(bundleHash);

  // A worker without the bundle in memory rebuilds it from MongoDB, and the run replays with it.
  await replayWithTodaysCode(await sessionHistory(stack, sessionId), `session/${sessionId}`);
});

it('runs delegation children on the parent session bundle, passed by hash', async () => {
  const toolMocks = [
    { toolName: 'search_flights', response: { best_price: 240, summary: 'Round trip from $240' } },
    { toolName: 'search_hotels', response: { hotels: ['A', 'B', 'C'] } },
  ];
  let sessionId: string | undefined;
  for (const message of ['I want to plan a trip', 'Lisbon', '2026-05-01', '2026-05-08']) {
    const res = await chat(sample, { message, ...(sessionId ? { sessionId } : {}), testContext: { toolMocks } });
    expect(res.status).toBe(200);
    sessionId = res.body.sessionId;
  }
  const client_ = await stack.ctx.temporal.client();
  const runs: RawHistory[] = [];
  for await (const run of client_.workflow.list({ query: `WorkflowId = "session/${sessionId}"` })) runs.push(await rawHistory(run.workflowId, run.runId));
  const sessionHashes = new Set(runs.flatMap(bundleHashesIn));
  expect(sessionHashes.size).toBe(1);
  const [bundleHash] = [...sessionHashes];
  const children = runs.flatMap((h) => (h.events ?? []).map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).filter((a) => !!a));
  expect(children.length).toBeGreaterThanOrEqual(2);
  for (const child of children) {
    const input = JSON.parse(Buffer.from(child.input!.payloads![0]!.data!).toString('utf8'));
    expect(input.bundleRef).toEqual({ kind: 'bundle', bundleHash });
    expect(bundleHashesIn(await rawHistory(child.workflowId!))).toEqual([bundleHash]);
  }
});

it('builds a bundle from MongoDB once per worker cache, and only within its own project', async () => {
  const store = createSessionBundleStore({ models: stack.ctx.models, cacheSize: 2 });
  const scope = { tenantId: t.tenantId, projectId: t.projectId };
  const first = await store.load({ ...scope, bundleRef: { kind: 'latest_versions' } });
  const again = await store.load({ ...scope, bundleRef: { kind: 'bundle', bundleHash: first!.bundleHash } });
  expect(again).toBe(first);
  expect(store.stats.built).toBe(1);
  expect(Object.keys(first!.agents)).toEqual(['Pinned']);
  // Another tenant naming the hash gets nothing, cached or not.
  expect(await store.load({ tenantId: sample.tenantId, projectId: sample.projectId, bundleRef: { kind: 'bundle', bundleHash: first!.bundleHash } })).toBeNull();
  const cold = createSessionBundleStore({ models: stack.ctx.models, cacheSize: 2 });
  expect(await cold.load({ tenantId: sample.tenantId, projectId: sample.projectId, bundleRef: { kind: 'bundle', bundleHash: first!.bundleHash } })).toBeNull();
});

it("applies a deployment's model overrides to the agents its sessions run", async () => {
  const res = await api.post(`/api/projects/${t.projectId}/deployments`, {
    key: t.adminKey,
    json: { environment: 'staging', agentVersionManifest: { Pinned: '1.0.0' }, entryAgentName: 'Pinned', modelOverrides: { Pinned: { model: 'openai:gpt-4o-mini', temperature: 0.3 } } },
  });
  expect(res.status).toBe(201);
  const store = createSessionBundleStore({ models: stack.ctx.models, cacheSize: 2 });
  const bundle = await store.load({ tenantId: t.tenantId, projectId: t.projectId, bundleRef: { kind: 'deployment', deploymentId: res.body.deployment.id } });
  expect(bundle!.agents.Pinned!.execution).toMatchObject({ model: 'openai:gpt-4o-mini', temperature: 0.3 });
  expect(bundle!.entry_agent).toBe('Pinned');
  // The same versions without overrides are another bundle.
  const plain = await store.load({ tenantId: t.tenantId, projectId: t.projectId, bundleRef: { kind: 'latest_versions' } });
  expect(plain!.bundleHash).not.toBe(bundle!.bundleHash);
});

// Agent memory against the real stack: facts remembered in one session are there in the next for
// the same contact (not for another contact or another tenant), project facts are shared, a TTL
// expires a fact, RESET never/per_step, recall inject_context reaches the model's request,
// grant_memory lets a handed-off agent write (a read-only path is refused), and an anonymous
// session keeps user facts to itself and says so.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai';
import { eventually } from '../../support/eventually';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { buildSessionStartInput, claimSessionCapacity, createSessionRecord } from '../../../core/sessions/start';
import { AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions, temporalClient } from '../../../core/sessions/workflow-client';
import type { SessionContact } from '../../../workflows/definitions';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let fake: FakeOpenAI;

const MEMBER = `AGENT: Member
GOAL: "Remember the guest's tier"
MEMORY:
  persistent:
    - user.tier
      DEFAULT: "basic"
    - team.motto
      SCOPE: project
  remember:
    - WHEN: tier IS SET
      STORE: tier -> user.tier
    - WHEN: motto IS SET
      STORE: motto -> team.motto
FLOW:
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "Tier {{user.tier}}, motto {{team.motto}}, name {{user.display_name}}, known {{user.is_known}}"
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

const SHORT = `AGENT: Short
GOAL: "Keep a code for a moment"
MEMORY:
  persistent:
    - user.code
  remember:
    - WHEN: code IS SET
      STORE: code -> user.code
      TTL: "2s"
FLOW:
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "Code [{{user.code}}]"
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

const COUNTER = `AGENT: Counter
GOAL: "Count visits"
MEMORY:
  session:
    - visits
      INITIAL: 0
      RESET: never
    - tries
      INITIAL: 0
      RESET: per_step
FLOW:
  steps: [one, two]
  one:
    REASONING: false
    SET:
      visits = visits + 1
      tries = tries + 1
    RESPOND: "one visits {{visits}} tries {{tries}}"
    ON_INPUT:
      - ELSE:
        THEN: two
  two:
    REASONING: false
    RESPOND: "two tries {{tries}}"
    ON_INPUT:
      - ELSE:
        THEN: one
`;

const CONCIERGE = `AGENT: Concierge
GOAL: "Help the guest"
MEMORY:
  persistent:
    - user.tier
  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.tier, user.display_name]
`;

const FRONT = `AGENT: Front
GOAL: "Route"
MEMORY:
  persistent:
    - user.nickname
    - user.level
      ACCESS: read
HANDOFF:
  - TO: Back
    WHEN: input == "back"
    CONTEXT:
      grant_memory: [user.nickname, user.level]
FLOW:
  steps: [menu]
  menu:
    REASONING: false
    RESPOND: "Hi [{{user.nickname}}] level [{{user.level}}]"
    ON_INPUT:
      - ELSE:
        THEN: menu
`;

const BACK = `AGENT: Back
GOAL: "Write what Front granted"
FLOW:
  steps: [write]
  write:
    REASONING: false
    SET:
      user.nickname = "Captain"
      user.level = 99
    RESPOND: "Saved"
    ON_INPUT:
      - ELSE:
        THEN: write
`;

const PLANNER = `AGENT: Planner
GOAL: "Plan with a helper"
DELEGATE:
  - AGENT: Noter
    WHEN: input == "never sent"
    PURPOSE: "Write a note"
    INPUT:
      topic: input
    RETURNS:
      child_tier: child_tier
FLOW:
  steps: [menu, ask, show]
  menu:
    REASONING: false
    RESPOND: "Say a topic"
    ON_INPUT:
      - ELSE:
        THEN: ask
  ask:
    REASONING: false
    DELEGATE: Noter
    THEN: show
  show:
    REASONING: false
    RESPOND: "Child saw [{{child_tier}}]"
    ON_INPUT:
      - ELSE:
        THEN: ask
`;

const NOTER = `AGENT: Noter
GOAL: "Note the topic"
MEMORY:
  persistent:
    - user.tier
      ACCESS: read
    - run.note
      SCOPE: execution_tree
FLOW:
  steps: [note]
  note:
    REASONING: false
    SET:
      child_tier = user.tier
      run.note = topic
    THEN: COMPLETE
`;

const contact = (contactId: string, displayName = 'Ann'): SessionContact => ({
  contactId,
  type: 'customer',
  identityType: 'email',
  displayName,
  company: null,
  department: null,
  accountRef: null,
  tags: [],
});

/** Starts a session of `agentName` with the contact the session start found (none: anonymous). */
async function startWith(owner: SeededTenant, agentName: string, who?: SessionContact): Promise<string> {
  const start = {
    ...buildSessionStartInput(stack.config, { tenantId: owner.tenantId, projectId: owner.projectId, agentId: null, agentName, channel: 'api' }),
    ...(who ? { contact: who } : {}),
  };
  await claimSessionCapacity(stack.ctx, start);
  await createSessionRecord(stack.ctx.models, start);
  await (await temporalClient(stack.ctx)).workflow.start(AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions(stack.config, start));
  return start.sessionId;
}

async function say(owner: SeededTenant, sessionId: string, message: string, testContext?: Record<string, unknown>) {
  const res = await api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, sessionId, message, ...(testContext ? { testContext } : {}) } });
  expect(res.status).toBe(200);
  return res.body as { response: string; state: { variables: Record<string, unknown> } };
}

/** A new session's first reply. */
async function firstReply(owner: SeededTenant, agentName: string, who?: SessionContact, testContext?: Record<string, unknown>): Promise<{ sessionId: string; response: string; variables: Record<string, unknown> }> {
  const sessionId = await startWith(owner, agentName, who);
  const r = await say(owner, sessionId, 'hi', testContext);
  return { sessionId, response: r.response, variables: r.state.variables };
}

const traces = (owner: SeededTenant, sessionId: string) =>
  stack.ctx.models.TraceEvent.find({ tenantId: owner.tenantId, sessionId }).sort({ seq: 1 }).lean();

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-memory' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-memory');
  for (const [name, src] of Object.entries({ Member: MEMBER, Short: SHORT, Counter: COUNTER, Concierge: CONCIERGE, Back: BACK, Front: FRONT, Noter: NOTER, Planner: PLANNER })) await publishAgent(api, t, name, src);
  await publishAgent(api, other, 'Member', MEMBER);
});
afterAll(async () => {
  await stack.close();
  await fake.close();
});

describe('persistent facts across sessions', () => {
  test('a remembered user fact is there for the same contact only; a project fact for everyone in the project; nothing crosses tenants', async () => {
    await firstReply(t, 'Member', contact('ct_ann'), { gatherValues: { tier: 'gold', motto: 'Be kind' } });
    // Saved by a local activity before the turn answered: the row is there now.
    const rows = await stack.ctx.models.MemoryFact.find({ tenantId: t.tenantId }).lean();
    expect(rows.map((r) => [r.scope, r.scopeKey, r.path, r.value, r.projectId]).sort()).toEqual([
      ['project', '', 'team.motto', 'Be kind', t.projectId],
      ['user', 'ct_ann', 'user.tier', 'gold', t.projectId],
    ]);

    expect((await firstReply(t, 'Member', contact('ct_ann'))).response).toContain('Tier gold, motto Be kind, name Ann, known true');
    expect((await firstReply(t, 'Member', contact('ct_bob', 'Bob'))).response).toContain('Tier basic, motto Be kind, name Bob, known true');
    // Another tenant, the same contact id: none of the first tenant's facts.
    expect((await firstReply(other, 'Member', contact('ct_ann'))).response).toContain('Tier basic, motto , name Ann, known true');
  });

  test('an anonymous session starts from DEFAULT, keeps its user facts to itself, and traces why', async () => {
    const anon = await firstReply(t, 'Member', undefined, { gatherValues: { tier: 'vip' } });
    const said = await eventually(() => traces(t, anon.sessionId), (evs) => evs.some((e) => e.type === 'decision' && e.data.decisionKind === 'memory'));
    expect(said.find((e) => e.data.decisionKind === 'memory')?.data).toMatchObject({ decision: 'session_only', paths: expect.arrayContaining(['user.tier', 'session:Counter.visits']) });
    expect(await stack.ctx.models.MemoryFact.countDocuments({ tenantId: t.tenantId, value: 'vip' })).toBe(0);
    expect((await say(t, anon.sessionId, 'again')).response).toContain('Tier vip');
    expect((await firstReply(t, 'Member')).response).toContain('Tier basic, motto Be kind, name , known false');
  });

  test('a fact remembered with TTL "2s" is gone for the next session once it has expired', async () => {
    await firstReply(t, 'Short', contact('ct_ttl'), { gatherValues: { code: 'X1' } });
    const row = await stack.ctx.models.MemoryFact.findOne({ tenantId: t.tenantId, scopeKey: 'ct_ttl', path: 'user.code' }).lean();
    expect(row?.value).toBe('X1');
    const expiresAt = row!.expiresAt!.getTime();
    expect(expiresAt - row!.updatedAt.getTime()).toBe(2000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 50)));
    expect((await firstReply(t, 'Short', contact('ct_ttl'))).response).toContain('Code []');
    // Deleted on read where the store has no TTL monitor (and by the monitor elsewhere).
    await eventually(() => stack.ctx.models.MemoryFact.countDocuments({ tenantId: t.tenantId, scopeKey: 'ct_ttl' }), (n) => n === 0, 90_000, 250);
  });
});

describe('session variables', () => {
  test('RESET never comes back in the contact\'s next session; per_step starts again in each step', async () => {
    const first = await firstReply(t, 'Counter', contact('ct_count'));
    expect(first.response).toContain('one visits 0 tries 0');
    expect(first.response).toContain('two tries 0');
    expect(first.variables).toMatchObject({ visits: 1, tries: 0 });
    const second = await firstReply(t, 'Counter', contact('ct_count'));
    expect(second.response).toContain('one visits 1 tries 0');
    expect(second.variables).toMatchObject({ visits: 2 });
    expect((await firstReply(t, 'Counter', contact('ct_other'))).response).toContain('one visits 0');
  });
});

describe('delegation', () => {
  test('a delegated agent reads the session\'s facts and saves its execution_tree fact under the root session', async () => {
    await firstReply(t, 'Member', contact('ct_tree'), { gatherValues: { tier: 'silver' } });
    const s = await startWith(t, 'Planner', contact('ct_tree'));
    await say(t, s, 'hi');
    expect((await say(t, s, 'fees')).response).toContain('Child saw [silver]');
    const row = await stack.ctx.models.MemoryFact.findOne({ tenantId: t.tenantId, scope: 'execution_tree', path: 'run.note' }).lean();
    expect(row).toMatchObject({ scopeKey: s, value: 'fees', projectId: t.projectId });
  });
});

describe('recall and grant_memory', () => {
  test('recall inject_context puts the contact\'s facts into the model\'s request', async () => {
    await firstReply(t, 'Member', contact('ct_recall', 'Cleo'), { gatherValues: { tier: 'platinum' } });
    const before = fake.requests.length;
    await firstReply(t, 'Concierge', contact('ct_recall', 'Cleo'));
    const sent = fake.requests.slice(before).map((r) => JSON.stringify(r.body));
    expect(sent.length).toBeGreaterThan(0);
    const system = (fake.requests[before]?.body as { messages: Array<{ role: string; content: string }> }).messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain('Recalled from memory:\n- user.tier: "platinum"\n- user.display_name: "Cleo"');
  });

  test('a handed-off agent writes a granted path; a read-only grant is refused with a trace; the next session reads the fact', async () => {
    const s = await startWith(t, 'Front', contact('ct_grant'));
    expect((await say(t, s, 'hi')).response).toContain('Hi [] level []');
    expect((await say(t, s, 'back')).response).toContain('Saved');
    const rows = await stack.ctx.models.MemoryFact.find({ tenantId: t.tenantId, scopeKey: 'ct_grant' }).lean();
    expect(rows.map((r) => [r.path, r.value])).toEqual([['user.nickname', 'Captain']]);
    const evs = await eventually(() => traces(t, s), (e) => e.some((x) => x.type === 'error' && x.data.kind === 'memory_access'));
    expect(evs.find((x) => x.type === 'error' && x.data.kind === 'memory_access')?.data.message).toBe('SET user.level refused: Back may only read "user.level" (ACCESS: read)');
    expect((await firstReply(t, 'Front', contact('ct_grant'))).response).toContain('Hi [Captain] level []');
    // The run records its marker and replays deterministically with today's code.
    const history = await sessionHistory(stack, s);
    expect(patchIdsIn(history)).toContain('agent-memory-v1');
    await replayWithTodaysCode(history, `session/${s}`);
  });
});

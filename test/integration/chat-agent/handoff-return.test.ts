// HANDOFF ON_RETURN and PASS: through the real API and worker, with a model that speaks the OpenAI
// wire protocol: a child returning resumes the parent's FLOW at the named step in the same turn,
// leaves an instruction for the parent's next model call, or hands the triggering message back.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';

jest.setTimeout(60_000);

type ChatBody = { messages: { role: string; content: string }[] };
type Trace = { type: string; data: Record<string, unknown> };

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;

const verify = `AGENT: Verify
GOAL: "Verify the guest"
FLOW:
  ask:
    REASONING: false
    GATHER:
      - name: required
        prompt: "Your name, {{topic}} caller?"
`;

const handoff = (onReturn: string): string => `HANDOFF:
  - TO: Verify
    WHEN: topic IS SET AND name IS NOT SET
    PASS: [topic]
    RETURN: true
    ON_RETURN: ${onReturn}
`;

const deskStep = `AGENT: Desk_Step
GOAL: "Route guests"
${handoff('wrap_up')}FLOW:
  menu:
    REASONING: false
    GATHER:
      - topic: required
        prompt: "What is it about?"
    THEN: idle
  idle:
    REASONING: false
    RESPOND: "Anything else?"
    ON_INPUT:
      - ELSE:
        THEN: idle
  wrap_up:
    REASONING: false
    RESPOND: "Thanks {{name}}, your {{topic}} question is next."
    ON_INPUT:
      - ELSE:
        THEN: idle
`;

const reasoningDesk = (name: string, onReturn: string): string => `AGENT: ${name}
GOAL: "Help guests"
GATHER:
  - topic: required
    prompt: "What is it about?"
${handoff(onReturn)}`;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-return' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Verify', verify);
  await publishAgent(api, t, 'Desk_Step', deskStep);
  await publishAgent(api, t, 'Desk_Note', reasoningDesk('Desk_Note', '"Ask {{name}} whether the {{topic}} answer helped"'));
  await publishAgent(api, t, 'Desk_Resume', reasoningDesk('Desk_Resume', 'resume_intent'));
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-return');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
});

function conversation(agentId: string) {
  let sessionId: string | undefined;
  return async (message: string) => {
    const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message, ...(sessionId ? { sessionId } : {}) } });
    expect(res.status).toBe(200);
    sessionId = res.body.sessionId;
    return res.body as { response: string; traceEvents: Trace[]; state: { agent: string } };
  };
}

it('PASS: hands the value to the target, and ON_RETURN: step runs that step in the returning turn', async () => {
  const say = conversation('Desk_Step');
  const first = await say('billing');
  expect(first.response).toContain('Your name, billing caller?');
  expect(first.state.agent).toBe('Verify');
  const back = await say('Ada');
  expect(back.response).toBe('Thanks Ada, your billing question is next.');
  expect(back.state.agent).toBe('Desk_Step');
  expect(back.traceEvents.filter((e) => e.type === 'decision').map((e) => e.data.decision)).toContain('ON_RETURN -> wrap_up');
  expect(fake.requests).toHaveLength(0);
});

it('ON_RETURN with an instruction gives it, rendered, to the parent\'s next model call only', async () => {
  const say = conversation('Desk_Note');
  expect((await say('hello')).response).toBe('What is it about?');
  expect((await say('billing')).response).toContain('Your name, billing caller?');
  const before = fake.requests.length;
  // The return itself asks the model nothing: the instruction waits for the parent's next turn.
  expect((await say('Ada')).response).toBe('');
  expect(fake.requests.length).toBe(before);
  fake.script([{ text: 'Did that help, Ada?' }, { text: 'Bye.' }]);
  expect((await say('ok')).response).toBe('Did that help, Ada?');
  const noted = fake.requests[before]!.body as ChatBody;
  expect(noted.messages[0]!.content).toContain('The agent you handed over to has returned. Now: Ask Ada whether the billing answer helped');
  await say('thanks');
  const later = fake.requests.at(-1)!.body as ChatBody;
  expect(later.messages[0]!.content).not.toContain('has returned');
});

it('ON_RETURN: resume_intent hands the triggering message to the parent in the returning turn', async () => {
  const say = conversation('Desk_Resume');
  expect((await say('hello')).response).toBe('What is it about?');
  expect((await say('billing')).response).toContain('Your name, billing caller?');
  const before = fake.requests.length;
  fake.script([{ text: 'About billing, Ada: how can I help?' }]);
  const back = await say('Ada');
  expect(back.response).toBe('About billing, Ada: how can I help?');
  expect(back.state.agent).toBe('Desk_Resume');
  expect(fake.requests.length).toBe(before + 1);
  const body = fake.requests[before]!.body as ChatBody;
  expect(body.messages.at(-1)).toMatchObject({ role: 'user', content: 'billing' });
});

// GATHER field properties through the real API and Temporal: `sensitive: true` keeps a value out
// of the turn's trace events, its `state.variables` and the session detail while the tool still
// gets it; `default`, `depends_on` and `activation` decide what is asked (patch
// gather-field-rules-v1, recorded and replayed).
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const kyc = `AGENT: Kyc
GOAL: "Check an identity."
TOOLS:
  check_id(id: string) -> object
    description: "Check the ID"
FLOW:
  steps: [ask, check, done]
  ask:
    REASONING: false
    GATHER:
      - id_number: required
        prompt: "Your ID number?"
        validate: pattern(^[A-Z0-9]{6,12}$)
        sensitive: true
      - country: required
        prompt: "Which country issued it?"
        default: "NL"
      - region: required
        prompt: "Which region?"
        depends_on: [country]
    THEN: check
  check:
    REASONING: false
    CALL: check_id
      WITH:
        id: id_number
      AS: result
    THEN: done
  done:
    REASONING: false
    RESPOND: "Checked {{country}}/{{region}}."
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Kyc', kyc);
});
afterAll(() => stack.close());

type Trace = { type: string; data: Record<string, unknown> };
const chat = (message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', {
    key: t.adminKey,
    json: { projectId: t.projectId, agentId: 'Kyc', message, testContext: { toolMocks: [{ toolName: 'check_id', response: { ok: true } }] }, ...(sessionId ? { sessionId } : {}) },
  });

it('masks a sensitive value everywhere the session shows it, and applies the field rules', async () => {
  const first = await chat('hello');
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  expect(first.body.response).toContain('Your ID number?');

  const second = await chat('AB123456', sessionId);
  expect(second.status).toBe(200);
  // country has a default and is not asked; region depends on it and is.
  expect(second.body.response).toBe('Which region?');
  expect(JSON.stringify(second.body)).not.toContain('AB123456');
  expect(second.body.state.variables).toMatchObject({ id_number: '[sensitive]' });
  expect((second.body.traceEvents as Trace[])).toContainEqual(expect.objectContaining({ type: 'state_change', data: expect.objectContaining({ variable: 'id_number', value: '[sensitive]' }) }));

  const detail = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(detail.status).toBe(200);
  expect(JSON.stringify(detail.body)).not.toContain('AB123456');

  const third = await chat('North', sessionId);
  expect(third.status).toBe(200);
  expect(third.body.response).toBe('Checked NL/North.');
  const call = (third.body.traceEvents as Trace[]).find((e) => e.type === 'tool_call');
  expect(call?.data.input).toEqual({ id: '[sensitive]' });

  // The stored trace events too (the transcript keeps what the user typed, as said).
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  expect(traces.status).toBe(200);
  expect(JSON.stringify(traces.body)).toContain('[sensitive]');
  expect(JSON.stringify(traces.body)).not.toContain('AB123456');

  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('gather-field-rules-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

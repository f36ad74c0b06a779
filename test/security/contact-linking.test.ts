// A session's caller is linked to a contact of the session's own tenant only, and the caller's
// identity stays in MongoDB: a call from a number another tenant knows makes this tenant its own
// contact and leaves the other's untouched (not linked, not seen); the workflow carries the
// contact's id and descriptive fields, and no spelling of the number appears in its history,
// whether read as stored or decoded as a worker reads it.
import { randomBytes } from 'node:crypto';
import { voiceSessionId } from '../../core/telephony/voice';
import { type SessionStartInput } from '../../workflows/definitions';
import { publishAgent } from '../support/agents';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { callForm, insertConnection, postSigned, webhookPath } from '../support/voice';
import { historyBytes, rawSessionHistory, sessionHistory, storedHistory } from '../support/workflow-history';

jest.setTimeout(120_000);

const DESK = `AGENT: Desk
GOAL: "Answer the phone."
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Front desk."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;
let otherLine: string;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  await publishAgent(api, other, 'Desk', DESK);
  otherLine = await insertConnection(stack, other, { agentId: 'Desk' });
});
afterAll(async () => {
  await stack?.close();
});

async function startInput(sessionId: string): Promise<SessionStartInput> {
  const history = await sessionHistory(stack, sessionId);
  const started = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return JSON.parse(Buffer.from(started.data!).toString('utf8')) as SessionStartInput;
}

it("a call from a number another tenant knows links this tenant's own contact, and the number stays out of the history", async () => {
  const number = `+1555${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(0, 7)}`;
  // The first tenant knows the number as a described customer.
  const known = await api.post('/api/contacts', { key: t.adminKey, json: { identity: number, identityType: 'phone', displayName: 'Known Customer', company: 'First Tenant Ltd', tags: ['vip'] } });
  expect(known.status).toBe(201);
  const before = (await api.get(`/api/contacts/${known.body.data.id}`, { key: t.adminKey })).body.data;

  // The same number calls the other tenant's line.
  const callSid = 'CA' + randomBytes(16).toString('hex');
  const answered = await postSigned(stack, webhookPath(otherLine, 'voice'), callForm(callSid, { From: number }));
  expect(answered.status).toBe(200);
  const sessionId = voiceSessionId(otherLine, callSid);

  // The other tenant's session has a contact of its own, with none of the first tenant's data.
  const input = await startInput(sessionId);
  expect(input.contact).toBeDefined();
  expect(input.contact!.contactId).not.toBe(known.body.data.id);
  expect(input.contact).toEqual({ contactId: input.contact!.contactId, type: 'customer', identityType: 'phone', displayName: null, company: null, department: null, accountRef: null, tags: [] });
  const theirs = await api.get(`/api/contacts/${input.contact!.contactId}`, { key: other.adminKey });
  expect(theirs.status).toBe(200);
  expect(theirs.body.data).toMatchObject({ tenantId: other.tenantId, identity: number, sessionIds: [sessionId] });
  // The first tenant's contact is as it was: not linked, not seen, and the other's is hidden from it.
  expect((await api.get(`/api/contacts/${known.body.data.id}`, { key: t.adminKey })).body.data).toEqual(before);
  expect((await api.get(`/api/contacts/${input.contact!.contactId}`, { key: t.adminKey })).status).toBe(404);

  // Not in the start input, nor anywhere in the history: the number's digits, in no spelling.
  const digits = number.slice(1);
  for (const history of [await sessionHistory(stack, sessionId), await rawSessionHistory(stack, sessionId), await storedHistory(stack, `session/${sessionId}`)]) {
    const bytes = historyBytes(history).toString('latin1');
    expect(bytes).not.toContain(digits);
    expect(bytes).not.toContain(digits.slice(-7));
  }
});

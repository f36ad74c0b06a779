// Replies that come after the turn on the HTTP-async channel, on the real stack: an async tool's
// signed callback, and a human task resolved through the API, each resume the session and the
// reply is delivered to the subscription with its own message_id, after `suspended` /
// `waiting_for_human` and `resumed` statuses; a session that completes reports `ended`.
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';
import { ZAgentResponseEvent, ZAgentStatusEvent } from '../../../api/http-async/webhooks';
import { paymentAgent, publishAgent } from '../../support/agents';
import { sendCallback } from '../../support/callbacks';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startReceiver, type Receiver } from '../../support/receiver';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
/** One tenant per agent: a project's conversations start with its oldest agent. */
let payments: SeededTenant;
let refunds: SeededTenant;
let receiver: Receiver;
let origin: string;
const deliveries = () => receiver.received.filter((r) => r.path === '/hooks');
const toolRequests = () => receiver.received.filter((r) => r.path === '/pay').map((r) => r.body as { notify?: { url?: string; callbackSecret?: string } });


const REFUNDS = `AGENT: Refunds
GOAL: "Approve large refunds with a manager."
ESCALATE:
  triggers:
    - WHEN: refund_amount > 500 AND human IS NOT SET
      REASON: "Refund of {{refund_amount}} needs approval"
      PRIORITY: high
      FIELDS:
        - name: approved_amount
          type: number
          required: true
  on_human_complete:
    - IF human.resolved == true: CONTINUE
FLOW:
  steps: [ask_amount, decide]
  ask_amount:
    REASONING: false
    GATHER:
      - refund_amount: required
        type: number
        prompt: "How much should be refunded?"
    THEN: decide
  decide:
    REASONING: false
    RESPOND: "Refund of {{human.approved_amount}}: {{human.decision}}."
`;

beforeAll(async () => {
  // The payment service acknowledges with 202; the subscription's receiver takes callbacks with 200.
  receiver = await startReceiver((r) => (r.path === '/pay' ? 202 : 200));
  origin = receiver.origin;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [origin], httpAsync: [`${origin}/hooks`] } });
  api = client(stack.baseUrl);
  payments = await seedTenant(stack.ctx);
  refunds = await seedTenant(stack.ctx);
  await publishAgent(api, payments, 'Payments', paymentAgent({ endpoint: `${origin}/pay`, failedStep: false }));
  await publishAgent(api, refunds, 'Refunds', REFUNDS);
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

async function subscribe(owner: SeededTenant) {
  const res = await api.post<{ subscription: { id: string }; signingSecret: string }>(`/api/projects/${owner.projectId}/channels/http-async/subscriptions`, {
    key: owner.adminKey,
    json: { name: 'Front end', callbackUrl: `${origin}/hooks`, events: ['agent.response', 'agent.status'] },
  });
  expect(res.status).toBe(201);
  return { id: res.body.subscription.id, secret: res.body.signingSecret };
}

const send = (owner: SeededTenant, subscriptionId: string, message: string, sessionKey: string) =>
  api.post<{ message_id: string; session_key: string }>('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': owner.adminKey },
    json: { project_id: owner.projectId, subscription_id: subscriptionId, message, session_key: sessionKey },
  });

const of = (sessionKey: string) => deliveries().filter((d) => d.body.session_key === sessionKey);
const events = (sessionKey: string) => of(sessionKey).map((d) => (d.body.event === 'agent.status' ? `status:${String(d.body.status)}` : `response:${String(d.body.response)}`));

it('delivers the reply that follows an async tool callback with its own message_id', async () => {
  const sub = await subscribe(payments);
  const accepted = await send(payments, sub.id, 'pay please', `pay-${Date.now()}`);
  expect(accepted.status).toBe(202);
  const key = accepted.body.session_key;
  await eventually(async () => events(key), (e) => e.includes('status:suspended'), 30_000);
  const first = of(key).find((d) => d.body.event === 'agent.response')!;
  expect(first.body).toMatchObject({ message_id: accepted.body.message_id, is_new_session: true });
  expect(first.body.response).toContain('Processing your payment.');
  const suspended = of(key).find((d) => d.body.status === 'suspended')!;
  expect(suspended.body).toMatchObject({ related_message_id: accepted.body.message_id, details: { tool: 'process_payment', expires_at: expect.any(String) } });

  // The payment service answers later, by the signed callback the platform gave it.
  const request = toolRequests()[toolRequests().length - 1]!;
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx-77' });
  const cb = await sendCallback(request.notify!.url!, request.notify!.callbackSecret!, body);
  expect(cb.status).toBe(200);

  const all = await eventually(async () => events(key), (e) => e.includes('status:ended'), 30_000);
  expect(all.map((e) => e.split('\n')[0])).toEqual(['status:processing', 'response:Processing your payment.', 'status:suspended', 'status:resumed', 'response:Payment tx-77 went through.', 'status:ended']);
  const later = of(key).find((d) => String(d.body.response).includes('tx-77'))!;
  expect(later.body).toMatchObject({ in_reply_to: accepted.body.message_id, is_new_session: false, session_id: first.body.session_id, outcome: { status: 'ok' } });
  expect(later.body.message_id).toMatch(/^ham-/);
  expect(later.body.message_id).not.toBe(accepted.body.message_id);
  expect(of(key).find((d) => d.body.status === 'resumed')!.body).toMatchObject({ related_message_id: accepted.body.message_id, details: { cause: 'callback' } });
  for (const d of of(key)) {
    expect(verifyAblSignature(sub.secret, d.raw, d.headers['x-abl-timestamp'] as string, d.headers['x-abl-signature'] as string)).toBe(true);
    // Every body is what /openapi.json's webhooks say it is.
    (d.body.event === 'agent.status' ? ZAgentStatusEvent : ZAgentResponseEvent).parse(d.body);
  }

  // The session has ended: the next message opens a new one.
  const next = await send(payments, sub.id, 'pay again', key);
  expect(next.status).toBe(202);
  const reply = await eventually(async () => of(key).find((d) => d.body.message_id === next.body.message_id), (d) => d !== undefined, 30_000);
  expect(reply!.body.is_new_session).toBe(true);
  expect(reply!.body.session_id).not.toBe(first.body.session_id);
});

it('delivers the reply that follows a human task resolved through the API', async () => {
  const sub = await subscribe(refunds);
  const first = await send(refunds, sub.id, 'I want a refund', `refund-${Date.now()}`);
  const key = first.body.session_key;
  await eventually(async () => of(key).filter((d) => d.body.event === 'agent.response'), (r) => r.length >= 1, 30_000);
  const second = await send(refunds, sub.id, '600', key);
  expect(second.status).toBe(202);
  await eventually(async () => events(key), (e) => e.includes('status:waiting_for_human'), 30_000);
  const waiting = of(key).find((d) => d.body.status === 'waiting_for_human')!;
  const taskId = (waiting.body.details as { human_task_id: string }).human_task_id;
  expect(taskId).toMatch(/^ht_/);
  expect(waiting.body.related_message_id).toBe(second.body.message_id);

  const resolved = await api.post(`/api/projects/${refunds.projectId}/human-tasks/${taskId}/resolve`, {
    key: refunds.adminKey,
    json: { respondedBy: 'ada', decision: 'approved', fields: { approved_amount: 550 } },
  });
  expect(resolved.status).toBe(200);
  const later = await eventually(async () => of(key).find((d) => String(d.body.response).includes('Refund of 550: approved')), (d) => d !== undefined, 30_000);
  expect(later!.body).toMatchObject({ response: 'Refund of 550: approved.', in_reply_to: second.body.message_id, is_new_session: false });
  expect(later!.body.message_id).not.toBe(second.body.message_id);
  expect(of(key).find((d) => d.body.status === 'resumed')!.body).toMatchObject({ details: { cause: 'human_task' } });
});

// An HTTP-async delivery survives its worker: the worker process is killed while the receiver
// holds the reply's POST open, a message is sent while no worker runs, and once a worker is back
// both replies arrive, in order, with their own message_ids and signed with the documented scheme.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';

jest.setTimeout(180_000);

const ECHO_AGENT = echoAgent();

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
  /** 200, or 'held': the receiver never answered (its connection closed when the worker died). */
  answered: 200 | 'held';
}

let stack: TestStack;
let t: SeededTenant;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      // The very first callback is held open: its worker is killed while it waits for the answer.
      const hold = received.length === 0;
      received.push({ headers: req.headers, raw, body: JSON.parse(raw) as Record<string, unknown>, answered: hold ? 'held' : 200 });
      if (hold) return;
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  stack = await startTestStack({ env: { ...FAST_FAILOVER_ENV, HTTP_ASYNC_RETRY_INITIAL_MS: '200', HTTP_ASYNC_RETRY_MAX_INTERVAL_MS: '400' }, allowPrivate: { httpAsync: [receiverUrl] } });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), t, 'Echo', ECHO_AGENT);
});
afterAll(async () => {
  await stack.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

it('delivers the reply whose worker was killed mid-POST, and a message sent while no worker ran, once a worker is back', async () => {
  const api = client(stack.baseUrl);
  const sub = await api.post<{ subscription: { id: string }; signingSecret: string }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions`, {
    key: t.adminKey,
    json: { name: 'Front end', callbackUrl: receiverUrl, events: ['agent.response'] },
  });
  expect(sub.status).toBe(201);
  const send = async (sessionKey: string, n: number) => {
    const res = await api.post<{ message_id: string; session_key: string }>('/api/v1/channels/http-async/message', {
      headers: { 'x-api-key': t.adminKey },
      json: { project_id: t.projectId, subscription_id: sub.body.subscription.id, message: `message ${n}`, session_key: sessionKey, metadata: { n } },
    });
    expect(res.status).toBe(202);
    return res.body;
  };

  const first = await startWorkerProcess(stack.config);
  let second: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  try {
    const m1 = await send(`restart-${Date.now()}`, 1);
    await eventually(async () => received, (r) => r.length >= 1, 60_000, 20);
    expect(received[0]!.body.message_id).toBe(m1.message_id);
    // Killed while the receiver has the reply and has not answered.
    first.child.kill('SIGKILL');
    await first.exited;

    // Accepted with no worker running: the message waits in the conversation's history.
    const m2 = await send(m1.session_key, 2);

    second = await startWorkerProcess(stack.config);
    const ids = (r: Received[]) => r.filter((x) => x.answered === 200).map((x) => x.body.message_id);
    const answered = await eventually(async () => received, (r) => ids(r).includes(m1.message_id) && ids(r).includes(m2.message_id), 120_000, 100);

    // The held reply was posted again with the same message_id and the same bytes; none was lost,
    // and the conversation's order held: the first reply before the second.
    const m1Posts = answered.filter((r) => r.body.message_id === m1.message_id);
    expect(m1Posts[0]!.answered).toBe('held');
    expect(new Set(m1Posts.map((r) => r.raw)).size).toBe(1);
    expect(ids(answered).indexOf(m1.message_id)).toBeLessThan(ids(answered).indexOf(m2.message_id));
    expect(answered.map((r) => r.body.message_id).every((id) => id === m1.message_id || id === m2.message_id)).toBe(true);
    expect(answered.find((r) => r.body.message_id === m2.message_id)!.body).toMatchObject({ session_key: m1.session_key, is_new_session: false, metadata: { n: 2 } });
    for (const r of answered) {
      expect(verifyAblSignature(sub.body.signingSecret, r.raw, r.headers['x-abl-timestamp'] as string, r.headers['x-abl-signature'] as string)).toBe(true);
    }

    // Both are listed as delivered.
    const listed = await eventually(
      async () => (await api.get<{ deliveries: { messageId: string; status: string }[] }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.body.subscription.id}/deliveries`, { key: t.adminKey })).body.deliveries,
      (d) => [m1.message_id, m2.message_id].every((id) => d.some((x) => x.messageId === id && x.status === 'delivered')),
      10_000,
    );
    expect(listed.filter((d) => d.messageId === m1.message_id || d.messageId === m2.message_id).map((d) => d.status)).toEqual(['delivered', 'delivered']);
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) await first.stop();
    await second?.stop();
  }
});

// One delivery attempt of the worker, against the real store and a receiver on loopback: how it is
// recorded in recent deliveries (the first attempt of a message is one insert, answered from the
// unique index where an upsert's filter makes FerretDB read every delivery; later attempts count
// themselves on that record; another tenant's delivery of the same message id is its own record),
// the signing secret, opened once per sealed value and opened anew after a rotation, and the
// worker's copy of a subscription, used by a reply's first attempt only while it is the revision the
// message was accepted under and read within a second.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import type { CommandStartedEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import { createHttpAsyncDeliveryActivities, recordAttempt, SUBSCRIPTION_COPY_MS } from '../../../activities/http-async/delivery';
import { connectMongo } from '../../../db/connection';
import { createModels, type Models } from '../../../db/models';
import { createLogger } from '../../../lib/logger';
import { createActivityDeps } from '../../../workers/activity-deps';
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let counted: Connection;
let models: Models;
/** The commands sent on http_async_deliveries, by name. */
const commands: string[] = [];
/** Reads of tenant data keys (opening a secret). */
let dataKeyReads = 0;
/** Reads of subscriptions. */
let subscriptionReads = 0;
let receiver: Server;
let receiverUrl: string;
const received: { headers: IncomingHttpHeaders; raw: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, raw });
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  stack = await startTestStack({ allowPrivate: { httpAsync: [receiverUrl] } });
  counted = await connectMongo(`${stack.config.MONGODB_URI}?monitorCommands=true`);
  counted.getClient().on('commandStarted', (e: CommandStartedEvent) => {
    if (e.command[e.commandName] === 'http_async_deliveries') commands.push(e.commandName);
    if (e.command[e.commandName] === 'tenant_data_keys' && e.commandName === 'find') dataKeyReads++;
    if (e.command[e.commandName] === 'http_async_subscriptions' && e.commandName === 'find') subscriptionReads++;
  });
  models = createModels(counted);
  // The unique index the insert relies on, built before anything is counted.
  await models.HttpAsyncDelivery.init();
});
afterAll(async () => {
  await counted.close();
  await stack.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

const attempt = (tenantId: string, messageId: string, status: 'pending' | 'delivered', statusCode: number) => ({
  tenantId, projectId: 'p1', subscriptionId: 'whs-1', messageId, event: 'agent.response' as const, status, statusCode, latencyMs: 4, error: status === 'pending' ? `receiver answered ${statusCode}` : null,
});

it('inserts the first attempt and counts later ones on the same record', async () => {
  commands.length = 0;
  await recordAttempt(models.HttpAsyncDelivery, attempt('t1', 'ham-1', 'pending', 503));
  expect(commands).toEqual(['insert']);
  let docs = await models.HttpAsyncDelivery.find({ tenantId: 't1', messageId: 'ham-1' }).lean();
  expect(docs).toEqual([expect.objectContaining({ status: 'pending', attempts: 1, statusCode: 503, lastError: 'receiver answered 503', test: false })]);

  await recordAttempt(models.HttpAsyncDelivery, attempt('t1', 'ham-1', 'pending', 500));
  await recordAttempt(models.HttpAsyncDelivery, attempt('t1', 'ham-1', 'delivered', 200));
  docs = await models.HttpAsyncDelivery.find({ tenantId: 't1', messageId: 'ham-1' }).lean();
  expect(docs).toEqual([expect.objectContaining({ status: 'delivered', attempts: 3, statusCode: 200, lastError: null, projectId: 'p1', event: 'agent.response' })]);
});

it("keeps another tenant's delivery of the same message id apart", async () => {
  await recordAttempt(models.HttpAsyncDelivery, attempt('t2', 'ham-2', 'delivered', 200));
  await recordAttempt(models.HttpAsyncDelivery, attempt('t3', 'ham-2', 'pending', 502));
  const docs = await models.HttpAsyncDelivery.find({ messageId: 'ham-2' }).sort({ tenantId: 1 }).lean();
  expect(docs).toEqual([expect.objectContaining({ tenantId: 't2', status: 'delivered', attempts: 1 }), expect.objectContaining({ tenantId: 't3', status: 'pending', attempts: 1 })]);
});

/**
 * A new tenant's subscription to the receiver (through the API), and one delivery of the worker's
 * activity to it, which must be posted: it answers a check of the posted request's signature.
 */
async function subscribedWithDelivery() {
  const t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  const base = `/api/projects/${t.projectId}/channels/http-async/subscriptions`;
  const created = await api.post<{ subscription: { id: string }; signingSecret: string }>(base, { key: t.adminKey, json: { name: 'Front end', callbackUrl: receiverUrl } });
  expect(created.status).toBe(201);
  const id = created.body.subscription.id;
  const { deliverHttpAsyncEvent } = createHttpAsyncDeliveryActivities(createActivityDeps({ config: stack.config, models, logger: createLogger({ level: 'silent' }) }));
  const deliver = async (messageId: string, subscriptionRevision?: number) => {
    const before = received.length;
    const result = await deliverHttpAsyncEvent({
      tenantId: t.tenantId, projectId: t.projectId, subscriptionId: id, final: false,
      delivery: { messageId, event: 'agent.response', body: { event: 'agent.response', message_id: messageId, response: 'Noted.' } },
      ...(subscriptionRevision !== undefined ? { subscriptionRevision } : {}),
    });
    expect(result).toEqual({ outcome: 'delivered', error: null, events: ['agent.response'] });
    expect(received).toHaveLength(before + 1);
    const last = received[before]!;
    return (secret: string) => verifyAblSignature(secret, last.raw, last.headers['x-abl-timestamp'] as string, last.headers['x-abl-signature'] as string);
  };
  return { t, api, base, id, secret: created.body.signingSecret, deliver };
}

it('opens a signing secret once, and signs with the new one right after a rotation', async () => {
  const { t, api, base, id, secret, deliver } = await subscribedWithDelivery();
  dataKeyReads = 0;
  expect((await deliver('ham-a'))(secret)).toBe(true);
  expect((await deliver('ham-b'))(secret)).toBe(true);
  expect(dataKeyReads).toBe(1);

  const rotated = await api.post<{ signingSecret: string }>(`${base}/${id}/rotate-secret`, { key: t.adminKey });
  expect(rotated.status).toBe(200);
  const verifies = await deliver('ham-c');
  expect(verifies(rotated.body.signingSecret)).toBe(true);
  expect(verifies(secret)).toBe(false);
});

it('a reply\'s first attempt uses the copy of the revision its message was accepted under, read within a second; every change raises the revision', async () => {
  const { t, api, base, id, secret, deliver } = await subscribedWithDelivery();
  // Read on the stack's own connection, so the reads counted are the delivery's.
  const revision = async () => (await stack.ctx.models.HttpAsyncSubscription.findOne({ _id: id }, { revision: 1 }).lean())!.revision;
  expect(await revision()).toBe(1);

  subscriptionReads = 0;
  await deliver('ham-r1', 1);
  expect(subscriptionReads).toBe(1);
  // The same revision, read just now: the copy is used.
  expect((await deliver('ham-r2', 1))(secret)).toBe(true);
  expect(subscriptionReads).toBe(1);
  // A later attempt (no revision) always reads.
  await deliver('ham-r3');
  expect(subscriptionReads).toBe(2);

  const rotated = await api.post<{ signingSecret: string }>(`${base}/${id}/rotate-secret`, { key: t.adminKey });
  expect(rotated.status).toBe(200);
  expect(await revision()).toBe(2);
  // A message accepted after the rotation names revision 2: the copy (revision 1) is not used.
  const verifies = await deliver('ham-r4', 2);
  expect(subscriptionReads).toBe(3);
  expect(verifies(rotated.body.signingSecret)).toBe(true);
  expect(verifies(secret)).toBe(false);

  // A copy older than SUBSCRIPTION_COPY_MS is read again, even at the same revision.
  await new Promise((r) => setTimeout(r, SUBSCRIPTION_COPY_MS + 100));
  await deliver('ham-r5', 2);
  expect(subscriptionReads).toBe(4);

  // Every change raises the revision: settings, pause, resume.
  expect((await api.patch(`${base}/${id}`, { key: t.adminKey, json: { events: ['agent.response', 'agent.status'] } })).status).toBe(200);
  expect(await revision()).toBe(3);
  expect((await api.post(`${base}/${id}/pause`, { key: t.adminKey })).status).toBe(200);
  expect((await api.post(`${base}/${id}/resume`, { key: t.adminKey })).status).toBe(200);
  expect(await revision()).toBe(5);
});

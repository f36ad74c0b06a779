// How a delivery attempt is recorded in recent deliveries: the first attempt of a message is one
// insert (answered from the unique index, where an upsert's filter makes FerretDB read every
// delivery), later attempts count themselves on that record, and another tenant's delivery of the
// same message id is a record of its own.
import type { CommandStartedEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import { recordAttempt } from '../../../activities/http-async/delivery';
import { connectMongo } from '../../../db/connection';
import { createModels, type Models } from '../../../db/models';
import { startTestStack, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let counted: Connection;
let models: Models;
/** The commands sent on http_async_deliveries, by name. */
const commands: string[] = [];

beforeAll(async () => {
  stack = await startTestStack();
  counted = await connectMongo(`${stack.config.MONGODB_URI}?monitorCommands=true`);
  counted.getClient().on('commandStarted', (e: CommandStartedEvent) => {
    if (e.command[e.commandName] === 'http_async_deliveries') commands.push(e.commandName);
  });
  models = createModels(counted);
  // The unique index the insert relies on, built before anything is counted.
  await models.HttpAsyncDelivery.init();
});
afterAll(async () => {
  await counted.close();
  await stack.close();
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

// The activity that starts an async tool call (activities/tools/async-call.ts) stores the
// suspension once: a retried attempt sends the same callback URL and secret as the first, and
// the usual first attempt costs the suspensions collection one write and no read.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { CommandStartedEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import { compileProject } from '../../../abl';
import { createStartAsyncCall, type StartAsyncCallInput, type StartAsyncCallResult } from '../../../activities/tools/async-call';
import { connectMongo } from '../../../db/connection';
import { createModels } from '../../../db/models';
import { createActivityDeps } from '../../../workers/activity-deps';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

let stack: TestStack;
let t: SeededTenant;
let tool: Server;
let origin: string;
let counted: Connection;
const sent: { url: string; secret: string }[] = [];
const suspensionCommands: string[] = [];

beforeAll(async () => {
  tool = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { callbackUrl: string; callbackSecret: string };
      sent.push({ url: parsed.callbackUrl, secret: parsed.callbackSecret });
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`;
  stack = await startTestStack({ allowPrivate: { tools: [origin] } });
  t = await seedTenant(stack.ctx);
  // The activity's own connection, with its commands counted.
  counted = await connectMongo(`${stack.config.MONGODB_URI}?monitorCommands=true`);
  counted.getClient().on('commandStarted', (e: CommandStartedEvent) => {
    // Reads and writes (mongoose's index build on first use is not the activity's).
    if (e.command[e.commandName] === 'suspensions' && !['create', 'createIndexes'].includes(e.commandName)) suspensionCommands.push(e.commandName);
  });
});
afterAll(async () => {
  await counted.close();
  await stack.close();
  tool.closeAllConnections();
  await new Promise((r) => tool.close(r));
});

it('stores the suspension with one write, and a retried attempt sends the first secret again', async () => {
  const compiled = compileProject([
    {
      path: 'agents/Payments.agent.abl',
      content: `AGENT: Payments
GOAL: "Take a payment."
TOOLS:
  process_payment(amount: number) -> {status: string}
    type: async_webhook
    endpoint: "${origin}/pay"
    method: POST
`,
    },
  ]);
  const startAsyncCall = createStartAsyncCall(createActivityDeps({ config: stack.config, models: createModels(counted), logger: stack.ctx.logger }));
  const input: StartAsyncCallInput = {
    tenantId: t.tenantId,
    projectId: t.projectId,
    sessionId: 'b7a3f2de-0c1e-4b8e-9a55-3f3c2e1d0a11',
    callbackId: 'cb_0123456789abcdef0123456789abcdef',
    commandId: 'c1',
    agent: 'Payments',
    tool: compiled.agents.Payments!.tools[0]!,
    args: { amount: 42 },
    requestTimeoutMs: 5_000,
    waitMs: 60_000,
  };

  const first: StartAsyncCallResult = await new MockActivityEnvironment().run(startAsyncCall, input);
  expect(suspensionCommands).toEqual(['insert']);
  const retried = await new MockActivityEnvironment().run(startAsyncCall, input);

  expect(retried).toEqual(first);
  expect(sent).toHaveLength(2);
  expect(sent[1]).toEqual(sent[0]);
  expect(sent[0]!.url).toMatch(/\/api\/v1\/callbacks\/cb_0123456789abcdef0123456789abcdef$/);
  const stored = await stack.ctx.models.Suspension.find({ tenantId: t.tenantId }).lean();
  expect(stored).toHaveLength(1);
  expect(stored[0]!.expiresAt.getTime()).toBe(first.expiresAtMs);
});

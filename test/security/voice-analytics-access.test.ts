// Who sees which calls in voice analytics: another tenant's project is 404 and its calls, in the
// same hour, never reach this tenant's figures; a key bound to the other project of the tenant
// gets 404; a key bound to an environment counts only that environment's calls, and calls
// recorded before the events carried an environment count only for credentials bound to none.
import { createApiKey } from '../../core/tenancy/accounts';
import { ingestVoiceEvents, type CallRef } from '../../core/telephony/voice-metrics';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(120_000);

const HOUR = 3_600_000;

let stack: TestStack;
let t: SeededTenant;
let intruder: SeededTenant;
let api: ReturnType<typeof client>;
let hour: number;

/** A call of `owner` that started in `hour` and lasted `seconds`. */
async function call(owner: { tenantId: string; projectId: string }, callSid: string, environment: string | null, seconds: number): Promise<void> {
  const ref: CallRef = { tenantId: owner.tenantId, projectId: owner.projectId, connectionId: 'cc_sec', callSid, sessionId: `ses-${callSid}`, environment };
  await ingestVoiceEvents(stack.ctx, ref, [
    { type: 'voice.call_started', turn: 0, at: new Date(hour + 60_000), data: { direction: 'inbound', agent: 'Line' } },
    { type: 'voice.call_ended', turn: 0, at: new Date(hour + 120_000), data: { outcome: 'caller_hung_up', callStatus: 'completed', durationSec: seconds } },
  ]);
}

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  intruder = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  hour = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
  await call(t, 'CA_dev', 'dev', 10);
  await call(t, 'CA_prod', 'production', 30);
  // Written before events carried the environment.
  await call(t, 'CA_old', null, 50);
  await call(intruder, 'CA_intruder', 'dev', 1000);
});
afterAll(async () => {
  await stack?.close();
});

const read = (route: 'hourly' | 'summary', projectId: string, key: string) => api.get(`/api/projects/${projectId}/voice-analytics/${route}`, { key });

it("another tenant's project is 404 on both routes, and its calls never reach this tenant's figures", async () => {
  for (const route of ['hourly', 'summary'] as const) {
    const res = await read(route, intruder.projectId, t.adminKey);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    const back = await read(route, t.projectId, intruder.adminKey);
    expect(back.status).toBe(404);
  }
  // (10 + 30 + 50) / 3 s: the intruder's 1000 s call in the same hour is not among them.
  expect((await read('summary', t.projectId, t.adminKey)).body.data).toMatchObject({ total_calls: 3, avg_call_duration_ms: 30000 });
  expect((await read('hourly', t.projectId, t.adminKey)).body.data).toEqual([expect.objectContaining({ hour: new Date(hour).toISOString(), session_count: 3 })]);
});

it("a key bound to the tenant's other project is 404 here", async () => {
  const key = await t.keyWith(['session:read'], t.otherProjectId);
  expect((await read('summary', t.projectId, key)).status).toBe(404);
  expect((await read('hourly', t.projectId, key)).status).toBe(404);
});

it("a key bound to an environment counts only that environment's calls; calls without one only count unbound", async () => {
  const prod = (await createApiKey(stack.ctx.models, t.tenantId, { name: 'prod', permissions: ['session:read'], environments: ['production'] })).key;
  const dev = (await createApiKey(stack.ctx.models, t.tenantId, { name: 'dev', permissions: ['session:read'], environments: ['dev'] })).key;
  expect((await read('summary', t.projectId, prod)).body.data).toMatchObject({ total_calls: 1, avg_call_duration_ms: 30000 });
  expect((await read('summary', t.projectId, dev)).body.data).toMatchObject({ total_calls: 1, avg_call_duration_ms: 10000 });
  expect((await read('hourly', t.projectId, prod)).body.data).toEqual([expect.objectContaining({ session_count: 1, avg_call_duration_ms: 30000 })]);
});

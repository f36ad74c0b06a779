// Outbound calls' security boundaries against the real stack and the Twilio fake: a status
// callback must carry Twilio's signature under the connection's token (else 403 and nothing
// changes); a SIP destination with headers or unsafe parameters never reaches the provider;
// the destination is stored sealed and indexed by a keyed HMAC, never in clear (row, history);
// another project's calls are 404 like missing ones.
import { eventually } from '../support/eventually';
import { callTo, startOutboundWorld, type OutboundWorld } from '../integration/telephony/outbound-support';

let w: OutboundWorld;
const key = (k: string) => ({ headers: { 'x-api-key': k } });
const NUMBER = '+15005550015';

beforeAll(async () => {
  w = await startOutboundWorld();
}, 120_000);
afterAll(async () => {
  await w?.close();
});

async function ringingCall(): Promise<string> {
  const res = await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(w.connection.id, NUMBER) });
  expect(res.status).toBe(201);
  const id = res.body.data.outboundCallId as string;
  await eventually(() => w.api.get(`${w.base()}/${id}`, key(w.keys.read)), (r) => r.body.data?.phase === 'ringing', 30_000, 100);
  return id;
}

it('a status callback without a valid Twilio signature is 403 and moves nothing', async () => {
  const id = await ringingCall();
  const before = (await w.api.get(`${w.base()}/${id}`, key(w.keys.read))).body.data;
  const form = { CallSid: 'CA' + 'a'.repeat(32), AccountSid: w.connection.accountSid, CallStatus: 'completed', SequenceNumber: '900' };
  expect(await w.postStatus(w.connection.id, id, form, { signature: 'AAAA' })).toBe(403);
  expect(await w.postStatus(w.connection.id, id, form, { authToken: '0'.repeat(32) })).toBe(403);
  // A signature over another call's URL does not carry over to this one.
  const res = await fetch(`${w.stack.baseUrl}/api/telephony/twilio/${w.connection.id}/status?outboundCallId=${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  expect(res.status).toBe(403);
  const after = (await w.api.get(`${w.base()}/${id}`, key(w.keys.read))).body.data;
  expect(after.phase).toBe('ringing');
  expect(after.statusHistory).toEqual(before.statusHistory);
  await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
});

it('a SIP destination carrying headers or routing parameters is refused and never reaches the provider', async () => {
  const before = w.fake.calls().length;
  for (const sipUri of ['sip:bob@example.com?Replaces=abc', 'sip:bob@example.com;maddr=203.0.113.9', 'sip:bob@example.com\r\nX-Evil: 1', 'sip:bob@example.com>;x=<sip:eve@evil.example']) {
    const res = await w.api.post(w.base(), { ...key(w.keys.full), json: { channelConnectionId: w.connection.id, to: { type: 'sip', sipUri }, idempotencyKey: `sip-${Math.random()}` } });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'SIP_INJECTION_REJECTED' });
  }
  expect(w.fake.calls().length).toBe(before);
});

it('the destination is stored sealed and blind-indexed: not in the row, the index or the workflow history in clear', async () => {
  const id = await ringingCall();
  const raw = await w.stack.ctx.models.OutboundCall.collection.findOne({ _id: id as never });
  const stored = JSON.stringify(raw);
  expect(stored).not.toContain(NUMBER.slice(1));
  expect(raw!.destinationIndex).toMatch(/^[0-9a-f]{64}$/);
  const client = await w.stack.ctx.temporal.client();
  const history = await client.workflow.getHandle(`outbound-call/${id}`).fetchHistory();
  const text = JSON.stringify(history, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v));
  expect(text).not.toContain(NUMBER.slice(1));
  await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
});

it("another project's call is 404 CHANNEL_NOT_FOUND, exactly like a missing one", async () => {
  const id = await ringingCall();
  const otherKey = await w.keyFor(w.tenant.otherProjectId, ['outbound_calls.initiate', 'outbound_calls.read']);
  const other = await w.stack.ctx.models.Project.findById(w.tenant.otherProjectId).lean();
  for (const path of [`${w.base('production', other!.slug)}/${id}`, `${w.base('production', other!.slug)}/${id}/events`]) {
    const res = await w.api.get(path, key(otherKey));
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' });
  }
  const terminate = await w.api.post(`${w.base('production', other!.slug)}/${id}/terminate`, key(otherKey));
  expect(terminate.status).toBe(404);
  expect((await w.api.get(`${w.base()}/${id}`, key(w.keys.read))).body.data.phase).toBe('ringing');
  await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
});

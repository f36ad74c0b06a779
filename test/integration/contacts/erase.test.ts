// Erasing a contact against the real stack (POST /api/contacts/:id/erase): refused for another
// tenant, a project-bound key and a reader, changing nothing; on a soft-deleted contact it clears
// the record's identity and profile, redacts the transcripts of its linked sessions in every
// project, deletes their traces and memory stores and the contact's user-scoped facts, and keeps
// what holds no content (analytics events, other contacts' facts). Asked again, it changes nothing.
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession, seedTrace, seedTranscript } from '../sessions/fixtures';
import { ERASED_CONTENT } from '../../../core/contacts/erase';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx);
  globex = await seedTenant(stack.ctx);
});
afterAll(() => stack.close());

it('erases a contact’s personal data from its record, transcripts and memory, keeping what holds none', async () => {
  const m = stack.ctx.models;
  const created = await api.post('/api/contacts', {
    key: acme.adminKey,
    json: { identity: 'ada@example.com', identityType: 'email', displayName: 'Ada Lovelace', company: 'Analytical Engines', metadata: { plan: 'gold' }, tags: ['vip'] },
  });
  expect(created.status).toBe(201);
  const contactId: string = created.body.data.id;
  const other = (await api.post('/api/contacts', { key: acme.adminKey, json: { identity: 'bob@example.com', identityType: 'email' } })).body.data.id as string;

  // Two ended sessions of Ada, one per project, and one of Bob's.
  const sessions = [
    await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { status: 'ended', channelUId: 'ada-key' }),
    await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.otherProjectId }, { status: 'ended' }),
  ];
  const bobs = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { status: 'ended' });
  for (const s of [...sessions, bobs]) {
    await seedTranscript(stack.ctx, s, [{ role: 'user', content: 'I am ada@example.com' }, { role: 'assistant', content: 'Hello Ada' }]);
    await seedTrace(stack.ctx, s, [{ type: 'llm_call', spanId: 'a', data: { prompt: 'ada@example.com' } }]);
    await m.MemoryStore.create({ _id: `${s._id}:notes`, tenantId: acme.tenantId, projectId: s.projectId, sessionId: s._id, name: 'notes', content: '{"email":"ada@example.com"}', bytes: 27, createdAt: new Date(), updatedAt: new Date() });
    await m.AnalyticsEvent.collection.insertOne({ _id: `${s._id}:ev` as never, tenantId: acme.tenantId, projectId: s.projectId, category: 'system', eventType: 'x', sessionId: s._id, timestamp: new Date() });
  }
  for (const s of sessions) expect((await api.post(`/api/contacts/${contactId}/link-session`, { key: acme.adminKey, json: { sessionId: s._id } })).status).toBe(200);
  expect((await api.post(`/api/contacts/${other}/link-session`, { key: acme.adminKey, json: { sessionId: bobs._id } })).status).toBe(200);
  const fact = (projectId: string, scope: string, scopeKey: string, path: string) =>
    m.MemoryFact.create({ tenantId: acme.tenantId, projectId, scope, scopeKey, path, value: 'gold' });
  await fact(acme.projectId, 'user', contactId, 'user.tier');
  await fact(acme.otherProjectId, 'user', contactId, 'session:Agent.nickname');
  await fact(acme.projectId, 'user', other, 'user.tier');
  await fact(acme.projectId, 'project', '', 'team.plan');

  // The soft delete keeps its documented behaviour: the record and the data stay.
  expect((await api.delete(`/api/contacts/${contactId}`, { key: acme.adminKey })).status).toBe(200);
  expect(await m.Contact.findById(contactId).lean()).toMatchObject({ identity: 'ada@example.com', displayName: 'Ada Lovelace' });

  // Refusals that change nothing.
  const erase = (key: string, id = contactId) => api.post(`/api/contacts/${id}/erase`, { key });
  expect((await erase(globex.adminKey)).status).toBe(404);
  expect((await erase(acme.adminKey, 'ct_missing')).body).toMatchObject({ success: false, error: { code: 'CONTACT_NOT_FOUND' } });
  expect((await erase(await acme.keyWith(['contact:read']))).status).toBe(403);
  expect((await erase(await acme.keyWith(['contact:write'], acme.projectId))).status).toBe(403);
  expect(await m.Contact.findById(contactId).lean()).toMatchObject({ identity: 'ada@example.com', erasedAt: null });
  expect(await m.MemoryFact.countDocuments({ tenantId: acme.tenantId, scopeKey: contactId })).toBe(2);

  const res = await erase(acme.adminKey);
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ contactId, sessions: 2, sessionsEnded: 0, transcriptMessagesRedacted: 4, traceEventsDeleted: 2, memoryFactsDeleted: 2, memoryStoresDeleted: 2, recordingsDeleted: 0 });

  const record = await m.Contact.findById(contactId).lean();
  expect(record).toMatchObject({ identity: null, identityType: null, displayName: null, company: null, metadata: {}, tags: [], liveKey: `erased:${contactId}` });
  expect(record!.erasedAt).toBeInstanceOf(Date);
  const ids = sessions.map((s) => s._id);
  expect(await m.TranscriptMessage.find({ sessionId: { $in: ids } }).distinct('content')).toEqual([ERASED_CONTENT]);
  expect(await m.TranscriptMessage.countDocuments({ sessionId: { $in: ids } })).toBe(4);
  expect(await m.TraceEvent.countDocuments({ sessionId: { $in: ids } })).toBe(0);
  expect(await m.MemoryStore.countDocuments({ sessionId: { $in: ids } })).toBe(0);
  expect(await m.ContactSession.countDocuments({ contactId })).toBe(0);
  expect((await m.Session.findById(sessions[0]!._id).lean())!.channelUId).toBeNull();
  // Kept: analytics events, Bob's session and facts, the project's fact.
  expect(await m.AnalyticsEvent.countDocuments({ tenantId: acme.tenantId })).toBe(3);
  expect(await m.TranscriptMessage.find({ sessionId: bobs._id }).distinct('content')).toEqual(['Hello Ada', 'I am ada@example.com']);
  expect(await m.TraceEvent.countDocuments({ sessionId: bobs._id })).toBe(1);
  expect(await m.MemoryFact.countDocuments({ tenantId: acme.tenantId })).toBe(2);
  expect(await m.MemoryFact.countDocuments({ tenantId: acme.tenantId, scopeKey: contactId })).toBe(0);
  // The contact stays 404 to the other routes; its identity is free for a new contact.
  expect((await api.get(`/api/contacts/${contactId}`, { key: acme.adminKey })).status).toBe(404);
  expect((await api.post('/api/contacts', { key: acme.adminKey, json: { identity: 'ada@example.com', identityType: 'email' } })).status).toBe(201);

  // Asked again: nothing left to erase, the first erasure's time kept.
  const again = await erase(acme.adminKey);
  expect(again.status).toBe(200);
  expect(again.body.data).toMatchObject({ erasedAt: res.body.data.erasedAt, sessions: 0, transcriptMessagesRedacted: 0, memoryFactsDeleted: 0 });
});

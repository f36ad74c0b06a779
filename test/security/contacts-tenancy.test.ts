// Contacts stay inside their tenant: another tenant's contact is 404 CONTACT_NOT_FOUND for a read,
// a change, a delete and a link, and is never listed or found by lookup; a session of another
// tenant (or, for a key bound to a project, of another project) cannot be linked to a contact
// (404 SESSION_NOT_FOUND). After every refusal the contact and its links are as they were.
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { seedSession } from '../integration/sessions/fixtures';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
});

it("hides a contact from another tenant and leaves it unchanged", async () => {
  const email = `secret-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await api.post('/api/contacts', { key: t.adminKey, json: { identity: email, identityType: 'email', displayName: 'Mine' } });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const before = (await api.get(`/api/contacts/${id}`, { key: t.adminKey })).body.data;
  const theirSession = await seedSession(stack.ctx, { tenantId: other.tenantId, projectId: other.projectId });

  for (const res of [
    await api.get(`/api/contacts/${id}`, { key: other.adminKey }),
    await api.put(`/api/contacts/${id}`, { key: other.adminKey, json: { displayName: 'Taken over' } }),
    await api.delete(`/api/contacts/${id}`, { key: other.adminKey }),
    await api.post(`/api/contacts/${id}/link-session`, { key: other.adminKey, json: { sessionId: theirSession._id } }),
    await api.get(`/api/contacts/lookup?identity=${encodeURIComponent(email)}&identityType=email`, { key: other.adminKey }),
  ]) {
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'CONTACT_NOT_FOUND' });
  }
  const theirs = await api.get('/api/contacts', { key: other.adminKey });
  expect(theirs.body.data.map((c: { id: string }) => c.id)).not.toContain(id);
  // The other tenant may hold the same identity: it is a contact of its own.
  const own = await api.post('/api/contacts', { key: other.adminKey, json: { identity: email, identityType: 'email' } });
  expect(own.status).toBe(201);
  expect(own.body.data.id).not.toBe(id);

  expect((await api.get(`/api/contacts/${id}`, { key: t.adminKey })).body.data).toEqual(before);
});

it("refuses to link another tenant's session, or another project's for a key bound to a project, and links nothing", async () => {
  const contact = (await api.post('/api/contacts', { key: t.adminKey, json: { displayName: 'Linker' } })).body.data;
  const foreign = await seedSession(stack.ctx, { tenantId: other.tenantId, projectId: other.projectId });
  const otherProject = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId });
  const projectBound = await t.keyWith(['admin'], t.projectId);

  const attempts: [string, string, string][] = [
    ['admin key, another tenant\'s session', t.adminKey, foreign._id],
    ['project-bound key, another tenant\'s session', projectBound, foreign._id],
    ['project-bound key, another project\'s session', projectBound, otherProject._id],
  ];
  for (const [who, key, sessionId] of attempts) {
    const res = await api.post(`/api/contacts/${contact.id}/link-session`, { key, json: { sessionId } });
    expect({ who, status: res.status, code: res.body.error?.code }).toEqual({ who, status: 404, code: 'SESSION_NOT_FOUND' });
  }
  expect((await api.get(`/api/contacts/${contact.id}`, { key: t.adminKey })).body.data.sessionIds).toEqual([]);
  expect(await stack.ctx.models.ContactSession.countDocuments({ contactId: contact.id })).toBe(0);
});

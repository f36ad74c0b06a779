// The contact routes against the real stack: create, list, lookup, read, partial change, soft
// delete and link-session; every limit and enum; lookup normalisation (e-mail case, phone E.164);
// one live contact per identity under 20 concurrent creates; refusals that change nothing.
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from '../sessions/fixtures';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
});

const uniq = () => Math.random().toString(36).slice(2, 10);
const create = (json: unknown, key = t.adminKey) => api.post('/api/contacts', { key, json });

describe('create and read', () => {
  it('creates a contact with every field and returns it in data, then reads it back', async () => {
    const email = `ada-${uniq()}@example.com`;
    const res = await create({
      type: 'employee',
      identity: email,
      identityType: 'email',
      displayName: 'Ada Lovelace',
      department: 'Engineering',
      employeeId: 'E-1',
      company: 'Analytical Engines',
      accountRef: 'acct-9',
      channel: 'voice',
      metadata: { plan: 'gold', seats: 3, beta: true, none: null },
      tags: ['vip', 'beta'],
    });
    expect(res.status).toBe(201);
    const data = res.body.data;
    expect(data).toMatchObject({
      tenantId: t.tenantId,
      type: 'employee',
      identity: email,
      identityType: 'email',
      displayName: 'Ada Lovelace',
      department: 'Engineering',
      employeeId: 'E-1',
      company: 'Analytical Engines',
      accountRef: 'acct-9',
      channel: 'voice',
      metadata: { plan: 'gold', seats: 3, beta: true, none: null },
      tags: ['vip', 'beta'],
      deletedAt: null,
    });
    expect(data.id).toMatch(/^ct_/);
    expect(Date.parse(data.firstSeenAt)).not.toBeNaN();
    expect(data.lastSeenAt).toBe(data.firstSeenAt);

    const got = await api.get(`/api/contacts/${data.id}`, { key: t.adminKey });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ ...data, sessionIds: [] });
  });

  it('takes an empty body: an anonymous contact without identity', async () => {
    const res = await api.post('/api/contacts', { key: t.adminKey });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ type: 'anonymous', identity: null, identityType: null, tags: [], metadata: {} });
    // Any number of contacts without identity may exist.
    expect((await create({})).status).toBe(201);
  });

  it('defaults the type to customer when an identity is given', async () => {
    const res = await create({ identity: `ext-${uniq()}`, identityType: 'external' });
    expect(res.status).toBe(201);
    expect(res.body.data.type).toBe('customer');
  });

  it('is 404 CONTACT_NOT_FOUND for an unknown id', async () => {
    for (const res of [
      await api.get('/api/contacts/ct_unknown', { key: t.adminKey }),
      await api.put('/api/contacts/ct_unknown', { key: t.adminKey, json: { displayName: 'x' } }),
      await api.delete('/api/contacts/ct_unknown', { key: t.adminKey }),
      await api.post('/api/contacts/ct_unknown/link-session', { key: t.adminKey, json: { sessionId: 'nope' } }),
    ]) {
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'CONTACT_NOT_FOUND' });
    }
  });
});

describe('limits and enums', () => {
  const over = (n: number) => 'x'.repeat(n + 1);
  const at = (n: number) => 'x'.repeat(n);
  const cases: [string, Record<string, unknown>][] = [
    ['displayName over 200', { displayName: over(200) }],
    ['company over 200', { company: over(200) }],
    ['employeeId over 100', { employeeId: over(100) }],
    ['department over 200', { department: over(200) }],
    ['51 tags', { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }],
    ['a tag over 50 chars', { tags: [over(50)] }],
    ['an empty tag', { tags: [''] }],
    ['an unknown type', { type: 'robot' }],
    ['an unknown identityType', { identity: 'a@b.co', identityType: 'fax' }],
    ['identity without identityType', { identity: 'a@b.co' }],
    ['identityType without identity', { identityType: 'email' }],
    ['an email identity that is not an e-mail', { identity: 'not-an-email', identityType: 'email' }],
    ['an email identity with spaces around it', { identity: ' ada@example.com ', identityType: 'email' }],
    ['a blank identity', { identity: '   ', identityType: 'external' }],
    ['a phone identity that is not a number', { identity: '555-CALL-NOW', identityType: 'phone' }],
    ['a phone identity without country code', { identity: '0555 123 456', identityType: 'phone' }],
    ['metadata with a $ key', { metadata: { $where: 'x' } }],
    ['metadata with a dotted key', { metadata: { 'a.b': 'x' } }],
    ['metadata with a nested object', { metadata: { a: { b: 1 } } }],
    ['metadata with 51 keys', { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }],
    ['an unknown field', { nickname: 'Ada' }],
    ['a blank displayName', { displayName: '   ' }],
  ];
  it.each(cases)('refuses %s with 400 in the envelope and stores nothing', async (_what, body) => {
    const before = (await api.get('/api/contacts', { key: t.adminKey })).body.total;
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(typeof res.body.error.code).toBe('string');
    expect(typeof res.body.error.message).toBe('string');
    expect((await api.get('/api/contacts', { key: t.adminKey })).body.total).toBe(before);
  });

  it('refuses a bad phone identity as INVALID_PHONE_NUMBER', async () => {
    const res = await create({ identity: 'call me', identityType: 'phone' });
    expect(res.body.error.code).toBe('INVALID_PHONE_NUMBER');
  });

  it('accepts every field at its limit', async () => {
    const res = await create({
      displayName: at(200),
      company: at(200),
      employeeId: at(100),
      tags: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(50, 'x')),
      metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i])),
    });
    expect(res.status).toBe(201);
    expect(res.body.data.tags).toHaveLength(50);
    expect(res.body.data.displayName).toHaveLength(200);
  });

  it('accepts every type', async () => {
    for (const type of ['employee', 'customer', 'anonymous']) {
      expect((await create({ type })).body.data.type).toBe(type);
    }
  });
});

describe('list', () => {
  it('filters by type and channel, pages newest first with a total, and leaves deleted ones out', async () => {
    const tenant = await seedTenant(stack.ctx);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await create({ type: i % 2 ? 'employee' : 'customer', channel: i < 3 ? 'voice' : 'web', displayName: `c${i}` }, tenant.adminKey);
      ids.push(res.body.data.id);
    }
    const all = await api.get('/api/contacts', { key: tenant.adminKey });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(5);
    expect(all.body.data.map((c: { id: string }) => c.id)).toEqual([...ids].reverse());

    const page = await api.get('/api/contacts?limit=2&offset=1', { key: tenant.adminKey });
    expect(page.body.total).toBe(5);
    expect(page.body.data.map((c: { id: string }) => c.id)).toEqual([ids[3], ids[2]]);

    const employees = await api.get('/api/contacts?type=employee', { key: tenant.adminKey });
    expect(employees.body.total).toBe(2);
    expect(employees.body.data.every((c: { type: string }) => c.type === 'employee')).toBe(true);

    const voice = await api.get('/api/contacts?channel=voice&type=customer', { key: tenant.adminKey });
    expect(voice.body.data.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[0]]);

    expect((await api.delete(`/api/contacts/${ids[4]}`, { key: tenant.adminKey })).status).toBe(200);
    const after = await api.get('/api/contacts', { key: tenant.adminKey });
    expect(after.body.total).toBe(4);
    expect(after.body.data.map((c: { id: string }) => c.id)).not.toContain(ids[4]);
  });

  it('refuses a limit over 200, a negative offset and an unknown type', async () => {
    for (const q of ['limit=201', 'limit=0', 'offset=-1', 'type=robot', 'limit=abc']) {
      const res = await api.get(`/api/contacts?${q}`, { key: t.adminKey });
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
    }
  });
});

describe('lookup', () => {
  it('compares e-mails case-insensitively', async () => {
    const local = `Grace.${uniq()}`;
    const created = await create({ identity: `${local}@Example.COM`, identityType: 'email' });
    expect(created.status).toBe(201);
    const found = await api.get(`/api/contacts/lookup?identity=${encodeURIComponent(`${local.toLowerCase()}@example.com`)}&identityType=email`, { key: t.adminKey });
    expect(found.status).toBe(200);
    expect(found.body.data.id).toBe(created.body.data.id);
    // The same address in another case is the same identity.
    const again = await create({ identity: `${local.toUpperCase()}@EXAMPLE.com`, identityType: 'email' });
    expect({ status: again.status, code: again.body.error?.code }).toEqual({ status: 409, code: 'CONTACT_IDENTITY_CONFLICT' });
  });

  it('normalises phone numbers to E.164 when storing and when looking up', async () => {
    const digits = `1555${Math.floor(1_000_000 + Math.random() * 8_999_999)}`;
    const created = await create({ identity: `+${digits.slice(0, 1)} (${digits.slice(1, 4)}) ${digits.slice(4, 7)}-${digits.slice(7)}`, identityType: 'phone' });
    expect(created.status).toBe(201);
    expect(created.body.data.identity).toBe(`+${digits}`);
    for (const form of [`+${digits}`, `00${digits}`, `+${digits.slice(0, 4)}.${digits.slice(4)}`]) {
      const found = await api.get(`/api/contacts/lookup?identity=${encodeURIComponent(form)}&identityType=phone`, { key: t.adminKey });
      expect({ form, status: found.status, id: found.body.data?.id }).toEqual({ form, status: 200, id: created.body.data.id });
    }
    const dup = await create({ identity: `00${digits}`, identityType: 'phone' });
    expect(dup.status).toBe(409);
    // A value that is no phone number is no contact's phone identity.
    const bad = await api.get('/api/contacts/lookup?identity=hello&identityType=phone', { key: t.adminKey });
    expect({ status: bad.status, code: bad.body.error.code }).toEqual({ status: 404, code: 'CONTACT_NOT_FOUND' });
  });

  it('compares external ids exactly (stored trimmed), and tries every type when identityType is omitted', async () => {
    const ext = `Cust-${uniq()}`;
    const created = await create({ identity: `  ${ext} `, identityType: 'external' });
    expect(created.body.data.identity).toBe(ext);
    expect((await api.get(`/api/contacts/lookup?identity=${ext.toLowerCase()}&identityType=external`, { key: t.adminKey })).status).toBe(404);
    const any = await api.get(`/api/contacts/lookup?identity=${ext}`, { key: t.adminKey });
    expect(any.body.data.id).toBe(created.body.data.id);
    // The same value as another type is another identity.
    expect((await api.get(`/api/contacts/lookup?identity=${ext}&identityType=email`, { key: t.adminKey })).status).toBe(404);
  });

  it('needs identity and a known identityType', async () => {
    expect((await api.get('/api/contacts/lookup', { key: t.adminKey })).status).toBe(400);
    expect((await api.get('/api/contacts/lookup?identity=a&identityType=fax', { key: t.adminKey })).status).toBe(400);
    const missing = await api.get(`/api/contacts/lookup?identity=nobody-${uniq()}@example.com&identityType=email`, { key: t.adminKey });
    expect({ status: missing.status, code: missing.body.error.code }).toEqual({ status: 404, code: 'CONTACT_NOT_FOUND' });
  });
});

describe('partial update', () => {
  it('changes only the fields given, and null clears a text field', async () => {
    const created = (await create({ displayName: 'Ada', company: 'AE', tags: ['a'], metadata: { k: 'v' }, channel: 'web' })).body.data;
    const res = await api.put(`/api/contacts/${created.id}`, { key: t.adminKey, json: { displayName: 'Ada King', company: null } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ displayName: 'Ada King', company: null, tags: ['a'], metadata: { k: 'v' }, channel: 'web', type: created.type });
    const got = (await api.get(`/api/contacts/${created.id}`, { key: t.adminKey })).body.data;
    expect(got).toMatchObject({ displayName: 'Ada King', company: null, tags: ['a'], metadata: { k: 'v' }, firstSeenAt: created.firstSeenAt });
  });

  it('an empty body changes nothing', async () => {
    const created = (await create({ displayName: 'Same' })).body.data;
    for (const res of [await api.put(`/api/contacts/${created.id}`, { key: t.adminKey, json: {} }), await api.put(`/api/contacts/${created.id}`, { key: t.adminKey })]) {
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual(created);
    }
  });

  it('refuses bad input and a taken identity, changing nothing', async () => {
    const taken = `taken-${uniq()}`;
    await create({ identity: taken, identityType: 'external' });
    const created = (await create({ displayName: 'Keep', identity: `mine-${uniq()}`, identityType: 'external' })).body.data;
    const refusals: [Record<string, unknown>, number][] = [
      [{ displayName: 'x'.repeat(201) }, 400],
      [{ type: 'robot' }, 400],
      [{ tags: Array.from({ length: 51 }, () => 't') }, 400],
      [{ identityType: 'phone' }, 400],
      [{ identity: taken }, 400],
      [{ identity: 'not a number', identityType: 'phone' }, 400],
      [{ identity: taken, identityType: 'external' }, 409],
      [{ displayName: 'Changed', identity: taken, identityType: 'external' }, 409],
    ];
    for (const [json, status] of refusals) {
      const res = await api.put(`/api/contacts/${created.id}`, { key: t.adminKey, json });
      expect({ json, status: res.status }).toEqual({ json, status });
    }
    const got = (await api.get(`/api/contacts/${created.id}`, { key: t.adminKey })).body.data;
    const { sessionIds: _s, ...rest } = got;
    expect(rest).toEqual(created);
  });

  it('moves the identity: the old one is free, the new one is found', async () => {
    const before = `old-${uniq()}`;
    const after = `new-${uniq()}`;
    const created = (await create({ identity: before, identityType: 'external' })).body.data;
    expect((await api.put(`/api/contacts/${created.id}`, { key: t.adminKey, json: { identity: after, identityType: 'external' } })).body.data.identity).toBe(after);
    expect((await api.get(`/api/contacts/lookup?identity=${after}&identityType=external`, { key: t.adminKey })).body.data.id).toBe(created.id);
    expect((await api.get(`/api/contacts/lookup?identity=${before}&identityType=external`, { key: t.adminKey })).status).toBe(404);
    expect((await create({ identity: before, identityType: 'external' })).status).toBe(201);
  });
});

describe('soft delete', () => {
  it('hides the contact from reads, lists and lookups, keeps the record, and frees the identity', async () => {
    const email = `gone-${uniq()}@example.com`;
    const created = (await create({ identity: email, identityType: 'email' })).body.data;
    const del = await api.delete(`/api/contacts/${created.id}`, { key: t.adminKey });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });

    expect((await api.get(`/api/contacts/${created.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await api.put(`/api/contacts/${created.id}`, { key: t.adminKey, json: { displayName: 'back' } })).status).toBe(404);
    expect((await api.delete(`/api/contacts/${created.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await api.get(`/api/contacts/lookup?identity=${email}&identityType=email`, { key: t.adminKey })).status).toBe(404);

    const stored = await stack.ctx.models.Contact.findById(created.id).lean();
    expect(stored?.deletedAt).toBeInstanceOf(Date);
    expect(stored?.displayName).toBe(created.displayName);

    const again = await create({ identity: email, identityType: 'email' });
    expect(again.status).toBe(201);
    expect(again.body.data.id).not.toBe(created.id);
    expect((await api.get(`/api/contacts/lookup?identity=${email}&identityType=email`, { key: t.adminKey })).body.data.id).toBe(again.body.data.id);
  });
});

describe('one live contact per identity', () => {
  it('20 concurrent creates of one identity: exactly one 201, the rest 409; after a delete a new create succeeds', async () => {
    const email = `race-${uniq()}@example.com`;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create({ identity: i % 2 ? email.toUpperCase() : email, identityType: 'email', displayName: `r${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('CONTACT_IDENTITY_CONFLICT');
    expect(await stack.ctx.models.Contact.countDocuments({ tenantId: t.tenantId, identityType: 'email', liveKey: `email:${email}` })).toBe(1);

    const winner = results.find((r) => r.status === 201)!.body.data.id;
    expect((await api.delete(`/api/contacts/${winner}`, { key: t.adminKey })).status).toBe(200);
    expect((await create({ identity: email, identityType: 'email' })).status).toBe(201);
  });

  it('the same identity is free in another tenant and as another identityType', async () => {
    const value = `shared-${uniq()}`;
    const other = await seedTenant(stack.ctx);
    expect((await create({ identity: value, identityType: 'external' })).status).toBe(201);
    expect((await create({ identity: value, identityType: 'external' }, other.adminKey)).status).toBe(201);
    expect((await create({ identity: `${value}@example.com`, identityType: 'email' })).status).toBe(201);
  });
});

describe('link-session', () => {
  it('links a session of the tenant once, and GET lists it, most recent first', async () => {
    const contact = (await create({ displayName: 'Linked' })).body.data;
    const s1 = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId });
    const s2 = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId });
    const link = (sessionId: string) => api.post(`/api/contacts/${contact.id}/link-session`, { key: t.adminKey, json: { sessionId } });
    const res = await link(s1._id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await link(s2._id)).status).toBe(200);
    expect((await link(s1._id)).status).toBe(200);
    const got = (await api.get(`/api/contacts/${contact.id}`, { key: t.adminKey })).body.data;
    expect(got.sessionIds).toEqual([s2._id, s1._id]);
  });

  it('needs a sessionId and a session that exists', async () => {
    const contact = (await create({})).body.data;
    expect((await api.post(`/api/contacts/${contact.id}/link-session`, { key: t.adminKey, json: {} })).status).toBe(400);
    const missing = await api.post(`/api/contacts/${contact.id}/link-session`, { key: t.adminKey, json: { sessionId: 'no-such-session' } });
    expect({ status: missing.status, code: missing.body.error.code }).toEqual({ status: 404, code: 'SESSION_NOT_FOUND' });
    expect((await api.get(`/api/contacts/${contact.id}`, { key: t.adminKey })).body.data.sessionIds).toEqual([]);
  });
});

describe('permissions', () => {
  it('reads need contact:read and changes contact:write', async () => {
    const contact = (await create({ displayName: 'Perm' })).body.data;
    const reader = await t.keyWith(['contact:read']);
    const writer = await t.keyWith(['contact:write']);
    const none = await t.keyWith(['agent:read']);
    expect((await api.get('/api/contacts', { key: reader })).status).toBe(200);
    expect((await api.get(`/api/contacts/${contact.id}`, { key: reader })).status).toBe(200);
    expect((await create({}, reader)).status).toBe(403);
    expect((await api.put(`/api/contacts/${contact.id}`, { key: reader, json: { displayName: 'x' } })).status).toBe(403);
    expect((await api.delete(`/api/contacts/${contact.id}`, { key: reader })).status).toBe(403);
    expect((await create({}, writer)).status).toBe(201);
    expect((await api.get('/api/contacts', { key: writer })).status).toBe(403);
    for (const res of [await api.get('/api/contacts', { key: none }), await create({}, none)]) expect(res.status).toBe(403);
    expect((await api.get('/api/contacts')).status).toBe(401);
    expect((await api.get(`/api/contacts/${contact.id}`, { key: t.adminKey })).body.data.displayName).toBe('Perm');
  });
});

// Attachments through the real API, Temporal and a fake OpenAI-compatible model: an upload
// streams into the GridFS bucket `attachments` (type from the content, size and count bounded),
// POST /api/v1/chat/send carries named attachments into a turn (the model is asked with their
// names and a text file's content), and agentic-app sessions take files from a key holding
// DOCUMENT_UPLOAD, as their create response says.
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { scopedKey } from '../telephony/recording-fixtures';

jest.setTimeout(90_000);

const MAX_BYTES = 64 * 1024;
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let fake: FakeOpenAI;

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a0e7e8b10000000049454e44ae426082', 'hex');

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-att' });
  stack = await startTestStack({
    worker: true,
    allowPrivate: { llm: [fake.baseURL] },
    env: { ATTACHMENT_MAX_BYTES: String(MAX_BYTES), ATTACHMENTS_MAX_PER_SESSION: '4', ATTACHMENT_MAX_TOKENS_PER_SESSION: '25000' },
  });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-att');
  await publishAgent(api, t, 'Reader', 'AGENT: Reader\nGOAL: "Read what the user sends."\n');
});
afterAll(async () => {
  await stack?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

/** A new session of the Reader agent, created with its first message. */
async function newSession(): Promise<string> {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Reader', message: 'Hello' } });
  expect(res.status).toBe(200);
  return res.body.sessionId as string;
}

function form(content: Buffer | string, filename: string, type?: string): FormData {
  const data = new FormData();
  data.append('file', new Blob([content], type ? { type } : {}), filename);
  return data;
}

async function upload(sessionId: string, body: FormData | string, options: { key?: string; projectId?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${stack.baseUrl}/api/projects/${options.projectId ?? t.projectId}/sessions/${sessionId}/attachments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key ?? t.adminKey}`, ...options.headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const storedFiles = (sessionId: string) => stack.ctx.models.Attachment.countDocuments({ 'metadata.sessionId': sessionId });
const chunks = () => stack.ctx.models.connection.db!.collection('attachments.chunks').countDocuments();

describe('POST …/sessions/:id/attachments', () => {
  it('stores a text file in GridFS and answers its id, name, type and size', async () => {
    const sessionId = await newSession();
    const res = await upload(sessionId, form('Invoice INV-123456\nTotal: 42 EUR\n', 'invoice.txt', 'text/plain'));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ success: true, attachmentId: expect.stringMatching(/^att_[a-z0-9]+$/), filename: 'invoice.txt', mimeType: 'text/plain', sizeBytes: 33 });
    const doc = await stack.ctx.models.Attachment.findById(res.body.attachmentId).lean();
    expect(doc).toMatchObject({ length: 33, metadata: { tenantId: t.tenantId, projectId: t.projectId, sessionId, mimeType: 'text/plain', text: true, tokens: 9, source: 'api' } });
  });

  it('decides the type from the content: a PNG sent as octet-stream is image/png; a path in the name is dropped', async () => {
    const sessionId = await newSession();
    const res = await upload(sessionId, form(PNG, '../../etc/pixel.png', 'application/octet-stream'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ filename: 'pixel.png', mimeType: 'image/png', sizeBytes: PNG.length });
  });

  it('refuses with 415 a type not allowed and content that is not what it claims, storing nothing', async () => {
    const sessionId = await newSession();
    const before = await chunks();
    const cases: [Buffer | string, string, string][] = [
      [Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46]), Buffer.alloc(200, 1)]), 'tool.txt', 'text/plain'], // an executable named .txt
      ['<html><script>alert(1)</script></html>', 'page.html', 'text/html'], // not a type taken
      ['just text', 'scan.pdf', 'application/pdf'], // claims PDF, is not one
      [Buffer.from([0x68, 0x69, 0x00, 0x68, 0x69]), 'notes.txt', 'text/plain'], // a NUL byte: not text
      [Buffer.concat([Buffer.from('caf'), Buffer.from([0xc3, 0x28]), Buffer.alloc(40_000, 0x61)]), 'menu.txt', 'text/plain'], // not UTF-8
    ];
    for (const [content, name, type] of cases) {
      const res = await upload(sessionId, form(content, name, type));
      expect({ name, status: res.status, code: res.body?.error?.code }).toEqual({ name, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
    }
    expect(await storedFiles(sessionId)).toBe(0);
    expect(await chunks()).toBe(before);
  });

  it('refuses a file over ATTACHMENT_MAX_BYTES with 413 and keeps none of its chunks', async () => {
    const sessionId = await newSession();
    const before = await chunks();
    const res = await upload(sessionId, form(Buffer.alloc(MAX_BYTES + 1, 0x61), 'big.txt', 'text/plain'));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await storedFiles(sessionId)).toBe(0);
    expect(await chunks()).toBe(before);
    // Exactly the limit is taken.
    const fits = await upload(sessionId, form(Buffer.alloc(MAX_BYTES, 0x61), 'fits.txt', 'text/plain'));
    expect(fits.status).toBe(201);
    expect(fits.body.sizeBytes).toBe(MAX_BYTES);
  });

  it('takes ATTACHMENTS_MAX_PER_SESSION files and refuses the next with 409', async () => {
    const sessionId = await newSession();
    for (let i = 0; i < 4; i++) expect((await upload(sessionId, form(`file ${i}`, `f${i}.md`))).status).toBe(201);
    const res = await upload(sessionId, form('one too many', 'f5.md'));
    expect(res.status).toBe(409);
    expect(await storedFiles(sessionId)).toBe(4);
  });

  it('refuses text past ATTACHMENT_MAX_TOKENS_PER_SESSION (estimated bytes / 4) with 413', async () => {
    const sessionId = await newSession();
    expect((await upload(sessionId, form(Buffer.alloc(60_000, 0x61), 'a.txt', 'text/plain'))).status).toBe(201);
    expect((await upload(sessionId, form(PNG, 'b.png', 'image/png'))).status).toBe(201); // images count no tokens
    const res = await upload(sessionId, form(Buffer.alloc(60_000, 0x62), 'c.txt', 'text/plain'));
    expect(res.status).toBe(413);
    expect(await storedFiles(sessionId)).toBe(2);
  });

  it('answers 400 without a file field, 415 for a JSON body, 404 for an unknown or deleted session (whose files go with it)', async () => {
    const sessionId = await newSession();
    const noFile = new FormData();
    noFile.append('note', 'no file here');
    expect((await upload(sessionId, noFile)).status).toBe(400);
    const extra = form('with a field', 'x.txt', 'text/plain');
    extra.append('note', 'not taken');
    expect((await upload(sessionId, extra)).status).toBe(400);
    // Two files: refused, and the first is not kept either.
    const two = form('first file', 'one.txt', 'text/plain');
    two.append('file', new Blob(['second file'], { type: 'text/plain' }), 'two.txt');
    expect((await upload(sessionId, two)).status).toBe(400);
    expect(await storedFiles(sessionId)).toBe(0);
    const json = await upload(sessionId, '{"file":"x"}', { headers: { 'content-type': 'application/json' } });
    expect(json.status).toBe(415);
    expect((await upload('00000000-0000-4000-8000-000000000000', form('x', 'x.txt'))).status).toBe(404);
    expect((await upload(sessionId, form('kept until deleted', 'k.txt'))).status).toBe(201);
    const before = await chunks();
    expect((await api.delete(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey })).status).toBe(200);
    expect(await storedFiles(sessionId)).toBe(0);
    expect(await chunks()).toBe(before - 1);
    const late = await upload(sessionId, form('late', 'late.txt'));
    expect(late.status).toBe(404);
  });

  it('needs session:execute (403 for a read-only key)', async () => {
    const sessionId = await newSession();
    const reader = await t.keyWith(['session:read']);
    expect((await upload(sessionId, form('x', 'x.txt'), { key: reader })).status).toBe(403);
  });
});

describe('POST /api/v1/chat/send', () => {
  const send = (json: unknown, key = t.adminKey) => api.post('/api/v1/chat/send', { key, json });
  const userContent = () => {
    const messages = (fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
    return JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)!.content);
  };

  it("gives the agent the attachments' names, types and sizes, and a text file's content", async () => {
    const sessionId = await newSession();
    const text = await upload(sessionId, form('Invoice INV-778899, total 42 EUR', 'invoice.txt', 'text/plain'));
    const image = await upload(sessionId, form(PNG, 'receipt.png', 'image/png'));
    fake.script([{ text: 'I see invoice INV-778899.' }]);
    const res = await send({ sessionId, message: 'Please check these', attachmentIds: [text.body.attachmentId, image.body.attachmentId] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, sessionId, response: 'I see invoice INV-778899.' });
    expect(res.body.attachments).toEqual([
      { attachmentId: text.body.attachmentId, filename: 'invoice.txt', mimeType: 'text/plain', sizeBytes: 32 },
      { attachmentId: image.body.attachmentId, filename: 'receipt.png', mimeType: 'image/png', sizeBytes: PNG.length },
    ]);
    const seen = userContent();
    expect(seen).toContain('Please check these');
    expect(seen).toContain('invoice.txt (text/plain, 32 bytes)');
    expect(seen).toContain('Invoice INV-778899, total 42 EUR');
    expect(seen).toContain(`receipt.png (image/png, ${PNG.length} bytes)`);
    expect(seen).not.toContain('IHDR'); // an image's bytes are not given
  });

  it("gives the start of a long text attachment, cut so the message fits what the agent reads, and says it is cut", async () => {
    const sessionId = await newSession();
    const long = 'HEAD-START ' + 'x'.repeat(6000) + 'TAIL-NOT-SEEN'.repeat(100);
    const up = await upload(sessionId, form(long, 'long.txt', 'text/plain'));
    expect(up.status).toBe(201);
    fake.script([{ text: 'Long.' }]);
    const res = await send({ sessionId, message: 'Read this', attachmentIds: [up.body.attachmentId] });
    expect(res.status).toBe(200);
    const seen = userContent();
    expect(seen).toContain('HEAD-START');
    expect(seen).not.toContain('TAIL-NOT-SEEN');
    expect(seen).toMatch(/Attachment 1 is cut here: only its first \d+ characters are included/);
    // The agent reads the whole message: nothing of it was cut by the runtime's own bound.
    expect(seen).toContain('[End of attachment 1]');
    expect(seen).not.toContain('[truncated');
  });

  it("answers 404 for an attachment of another session and runs no turn", async () => {
    const mine = await newSession();
    const other = await newSession();
    const theirs = await upload(other, form('secret of another session', 'other.txt', 'text/plain'));
    const before = fake.requests.length;
    const res = await send({ sessionId: mine, message: 'Look', attachmentIds: [theirs.body.attachmentId] });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(fake.requests.length).toBe(before);
  });

  it('answers 400 for a malformed or repeated id, and 404 for an unknown session', async () => {
    const sessionId = await newSession();
    const up = await upload(sessionId, form('x', 'x.txt'));
    expect((await send({ sessionId, message: 'x', attachmentIds: ['nope'] })).status).toBe(400);
    expect((await send({ sessionId, message: 'x', attachmentIds: [up.body.attachmentId, up.body.attachmentId] })).status).toBe(400);
    expect((await send({ sessionId, message: '', attachmentIds: [] })).status).toBe(400);
    expect((await send({ sessionId: '00000000-0000-4000-8000-000000000000', message: 'x' })).status).toBe(404);
  });
});

describe('agentic-app file uploads', () => {
  const base = `/api/v2/apps`;
  const createApp = (key: string) =>
    api.post(`${base}/${t.projectId}/environments/dev/sessions`, { headers: { 'x-api-key': key }, json: { sessionIdentity: [{ type: 'sessionReference', value: `up-${Date.now()}-${Math.random()}` }] } });
  const appUpload = async (appSessionId: string, body: FormData, key: string, env = 'dev') => {
    const res = await fetch(`${stack.baseUrl}${base}/${t.projectId}/environments/${env}/sessions/${appSessionId}/attachments`, { method: 'POST', headers: { 'x-api-key': key }, body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string } } };
  };

  it('takes files from a key with DOCUMENT_UPLOAD, as its create response promises, and a run carries them', async () => {
    const { key } = await scopedKey(stack.ctx, t, ['SESSION_CREATION', 'DOCUMENT_UPLOAD']);
    const created = await createApp(key);
    expect(created.status).toBe(200);
    expect(created.body.fileUploadConfig).toEqual({ enabled: true, isAttachmentsEnabled: true, maxFileCount: 4, maxFileSize: 0.06, maxTokens: 25000 });
    expect(created.body.allowedMimeTypes).toEqual(expect.arrayContaining(['txt', 'md', 'csv', 'json', 'pdf', 'png', 'jpg', 'docx']));
    const appSessionId = created.body.session.sessionId as string;
    const res = await appUpload(appSessionId, form('Order 5521: two chairs', 'order.txt', 'text/plain'), key);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ fileId: expect.stringMatching(/^att_/), fileName: 'order.txt', fileType: 'text/plain', sizeBytes: 22, sessionId: appSessionId });
    const doc = await stack.ctx.models.Attachment.findById(res.body.fileId).lean();
    expect(doc?.metadata).toMatchObject({ sessionId: appSessionId.slice(2), source: 'app', tenantId: t.tenantId });

    fake.script([{ text: 'Two chairs.' }]);
    const run = await api.post(`${base}/${t.projectId}/environments/dev/runs/execute`, {
      headers: { 'x-api-key': key },
      json: { sessionIdentity: [{ type: 'sessionIdentity', value: appSessionId }], input: [{ type: 'text', content: 'What did I order?' }], attachments: { enable: true, includeFiles: [res.body.fileId] } },
    });
    expect(run.status).toBe(200);
    expect(run.body.sessionInfo.attachments).toEqual([{ fileId: res.body.fileId, fileName: 'order.txt', fileType: 'text/plain' }]);
    expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain('Order 5521: two chairs');
  });

  it('says uploads are off to a key without DOCUMENT_UPLOAD, and refuses its upload with 403, storing nothing', async () => {
    const { key } = await scopedKey(stack.ctx, t, ['SESSION_CREATION']);
    const created = await createApp(key);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ allowedMimeTypes: [], fileUploadConfig: { enabled: false, maxFileCount: 0 } });
    const appSessionId = created.body.session.sessionId as string;
    const res = await appUpload(appSessionId, form('x', 'x.txt'), key);
    expect(res.status).toBe(403);
    expect(await storedFiles(appSessionId.slice(2))).toBe(0);
  });

  it('answers 404 for a session of another environment and 415 for a type not taken', async () => {
    const { key } = await scopedKey(stack.ctx, t, ['SESSION_CREATION', 'DOCUMENT_UPLOAD']);
    const created = await createApp(key);
    const appSessionId = created.body.session.sessionId as string;
    expect((await appUpload(appSessionId, form('x', 'x.txt'), key, 'staging')).status).toBe(404);
    expect((await appUpload(appSessionId, form('MZ\x90\x00binary', 'setup.exe', 'application/x-msdownload'), key)).status).toBe(415);
  });
});

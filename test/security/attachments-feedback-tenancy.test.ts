// Attachments and feedback stay inside their tenant, project and session: another tenant's
// session takes no upload (404, nothing stored), a message cannot carry another session's or
// tenant's attachment, feedback cannot name another tenant's message, an agentic-app upload needs
// DOCUMENT_UPLOAD, and a caller without a credential is answered before its upload is read.
import { request as httpRequest } from 'node:http';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { echoAgent, publishAgent } from '../support/agents';
import { scopedKey } from '../integration/telephony/recording-fixtures';

jest.setTimeout(90_000);

let stack: TestStack;
let a: SeededTenant;
let b: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  a = await seedTenant(stack.ctx);
  b = await seedTenant(stack.ctx);
  await publishAgent(api, a, 'Echo', echoAgent());
  await publishAgent(api, b, 'Echo', echoAgent());
});
afterAll(async () => {
  await stack?.close();
});

async function newSession(owner: SeededTenant): Promise<string> {
  const res = await api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, agentId: 'Echo', message: 'Hello' } });
  expect(res.status).toBe(200);
  return res.body.sessionId as string;
}

function form(content: string, filename = 'note.txt'): FormData {
  const data = new FormData();
  data.append('file', new Blob([content], { type: 'text/plain' }), filename);
  return data;
}

async function upload(projectId: string, sessionId: string, key: string, body: FormData) {
  const res = await fetch(`${stack.baseUrl}/api/projects/${projectId}/sessions/${sessionId}/attachments`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });
  return { status: res.status, body: (await res.json()) as { attachmentId?: string; error?: { code: string } } };
}

const stored = (sessionId: string) => stack.ctx.models.Attachment.countDocuments({ 'metadata.sessionId': sessionId });

it("takes an upload into the caller's own session, and none into another tenant's or project's (404, nothing stored)", async () => {
  const mine = await newSession(a);
  const theirs = await newSession(b);
  const own = await upload(a.projectId, mine, a.adminKey, form('mine'));
  expect(own.status).toBe(201);
  // Tenant A's key naming B's session, through A's project and through B's.
  expect((await upload(a.projectId, theirs, a.adminKey, form('intruder'))).status).toBe(404);
  expect((await upload(b.projectId, theirs, a.adminKey, form('intruder'))).status).toBe(404);
  // A key bound to A's other project does not reach A's main project's session either.
  const otherProjectKey = await a.keyWith(['session:execute'], a.otherProjectId);
  expect((await upload(a.projectId, mine, otherProjectKey, form('intruder'))).status).toBe(404);
  expect(await stored(theirs)).toBe(0);
  expect(await stored(mine)).toBe(1);
});

it("answers a caller without a credential with 401 before reading its upload, and stores nothing", async () => {
  const mine = await newSession(a);
  const own = await upload(a.projectId, mine, a.adminKey, form('authorised'));
  expect(own.status).toBe(201);
  // Headers announcing 8 MB; only the first kilobyte is sent: the answer comes without the rest.
  const answer = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}/api/projects/${a.projectId}/sessions/${mine}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz', 'content-length': String(8 * 1024 * 1024) },
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode!, connection: res.headers.connection });
      req.destroy();
    });
    req.on('error', reject);
    req.write(`--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${'a'.repeat(1024)}`);
  });
  expect(answer).toEqual({ status: 401, connection: 'close' });
  expect(await stored(mine)).toBe(1);
});

it("refuses a message that names another session's or tenant's attachment (404, no turn)", async () => {
  const mine = await newSession(a);
  const sibling = await newSession(a);
  const foreign = await newSession(b);
  const ownFile = await upload(a.projectId, mine, a.adminKey, form('own'));
  const siblingFile = await upload(a.projectId, sibling, a.adminKey, form('sibling'));
  const foreignFile = await upload(b.projectId, foreign, b.adminKey, form('foreign secret'));
  const send = (attachmentIds: string[]) => api.post('/api/v1/chat/send', { key: a.adminKey, json: { sessionId: mine, message: 'See attached', attachmentIds } });
  expect((await send([ownFile.body.attachmentId!])).status).toBe(200);
  // Read through the API (which has the session write what it holds), then counted.
  await api.get(`/api/v1/sessions/${mine}/transcripts`, { key: a.adminKey });
  const turns = await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: mine, role: 'user' });
  for (const id of [siblingFile.body.attachmentId!, foreignFile.body.attachmentId!]) {
    const res = await send([ownFile.body.attachmentId!, id]);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('foreign secret');
  }
  // Tenant B cannot send into A's session either, even with A's attachment id.
  const crossed = await api.post('/api/v1/chat/send', { key: b.adminKey, json: { sessionId: mine, message: 'x', attachmentIds: [ownFile.body.attachmentId!] } });
  expect(crossed.status).toBe(404);
  await api.get(`/api/v1/sessions/${mine}/transcripts`, { key: a.adminKey });
  expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: mine, role: 'user' })).toBe(turns);
});

it("records feedback on the caller's own reply only: another tenant's session or message is 404 and records nothing", async () => {
  const mine = await newSession(a);
  const foreign = await newSession(b);
  const replies = async (owner: SeededTenant, sessionId: string) => {
    const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: owner.adminKey });
    return (res.body.messages as { id: string; role: string }[]).filter((m) => m.role === 'assistant').map((m) => m.id);
  };
  const [myReply] = await replies(a, mine);
  const [foreignReply] = await replies(b, foreign);
  expect((await api.post('/api/v1/feedback', { key: a.adminKey, json: { sessionId: mine, messageId: myReply, rating: 'up' } })).status).toBe(201);
  expect((await api.post('/api/v1/feedback', { key: a.adminKey, json: { sessionId: foreign, messageId: foreignReply, rating: 'down' } })).status).toBe(404);
  expect((await api.post('/api/v1/feedback', { key: a.adminKey, json: { sessionId: mine, messageId: foreignReply, rating: 'down' } })).status).toBe(404);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ sessionId: foreign, category: 'feedback' })).toBe(0);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ category: 'feedback', tenantId: b.tenantId })).toBe(0);
});

it('takes agentic-app files only from a key holding DOCUMENT_UPLOAD, and only into its own app', async () => {
  const withUpload = await scopedKey(stack.ctx, a, ['SESSION_CREATION', 'DOCUMENT_UPLOAD']);
  const without = await scopedKey(stack.ctx, a, ['SESSION_CREATION', 'RUN_API']);
  const created = await api.post(`/api/v2/apps/${a.projectId}/environments/dev/sessions`, { headers: { 'x-api-key': withUpload.key }, json: {} });
  expect(created.status).toBe(200);
  const sid = created.body.session.sessionId as string;
  const appUpload = async (appId: string, key: string) => {
    const res = await fetch(`${stack.baseUrl}/api/v2/apps/${appId}/environments/dev/sessions/${sid}/attachments`, { method: 'POST', headers: { 'x-api-key': key }, body: form('app file') });
    return res.status;
  };
  expect(await appUpload(a.projectId, withUpload.key)).toBe(201);
  expect(await appUpload(a.projectId, without.key)).toBe(403);
  // Tenant B's key, even with every permission, does not find A's app or its session.
  const foreign = await scopedKey(stack.ctx, b, ['SESSION_CREATION', 'DOCUMENT_UPLOAD']);
  expect(await appUpload(a.projectId, foreign.key)).toBe(404);
  expect(await appUpload(b.projectId, foreign.key)).toBe(404);
  expect(await stored(sid.slice(2))).toBe(1);
});

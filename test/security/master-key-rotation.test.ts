// Master-key rotation against the real stack: secrets written under key A (and values an older
// release wrote in the legacy formats) still read once B is put first with A kept for decryption;
// the re-encrypt command moves everything under B, tenant by tenant, and can run again; with A
// dropped everything still reads, and a ciphertext under a key the ring does not list fails clearly.
// No scheme is keyed by a root key itself: each uses its own derived key.
import { createCipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { adminInProcess, type AdminResult } from '../support/admin-cli';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client, request } from '../support/http';
import { startReceiver, type Receiver } from '../support/receiver';
import { verifyAblSignature } from '../../examples/http-async/verify-signature';
import { resolveToolSecrets } from '../../db/tool-secret';
import { loadDecryptedLlmCredentials } from '../../db/llm-credential';
import { requireMasterKeys } from '../../core/tool-secrets/secrets';
import { llmRuntime } from '../../core/llm/runtime';
import { newDataKey, seal, unseal } from '../../lib/secret-envelope';
import { toolSecretAad } from '../../db/tool-secret';
import { type Payload } from '@temporalio/common';

jest.setTimeout(180_000);

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const A = `ka:${keyA.toString('base64')}`;
const B = `kb:${keyB.toString('base64')}`;
const UI_ORIGIN = 'http://localhost:8233';

let receiver: Receiver;
let mongoUri: string;
let stack: TestStack | null = null;
let t: SeededTenant;
let legacy: SeededTenant;
let signingSecret: string;
let subscriptionId: string;
let codecPayloadUnderA: Payload;

/** A stack on the one database of this file, with the master keys given (ENCRYPTION_KEY unset). */
async function stackWith(keys: string): Promise<TestStack> {
  await stack?.close();
  stack = await startTestStack({ env: { ENCRYPTION_KEY: '', ENCRYPTION_KEYS: keys, TEMPORAL_UI_ORIGIN: UI_ORIGIN, ...(mongoUri ? { MONGODB_URI: mongoUri } : {}) }, allowPrivate: { httpAsync: [receiver.origin] } });
  mongoUri = stack.config.MONGODB_URI;
  return stack;
}

function reencrypt(keys: string): Promise<AdminResult> {
  return adminInProcess({ MONGODB_URI: mongoUri, ENCRYPTION_KEYS: keys, ENCRYPTION_KEY: '', SECRET_MASTER_KEYS: '' }, 'reencrypt');
}

const toolQuery = (who: SeededTenant, name: string) => ({ tenantId: who.tenantId, projectId: who.projectId, toolName: 'crm', environment: 'dev', names: [name] });

/** Reads every kind of secret the way the platform does, on the current stack. */
async function readEverything(s: TestStack): Promise<void> {
  const ring = requireMasterKeys(s.ctx);
  expect(await resolveToolSecrets(s.ctx.models, ring, toolQuery(t, 'CRM_TOKEN'))).toEqual({ CRM_TOKEN: 'crm-token-under-a' });
  expect(await resolveToolSecrets(s.ctx.models, ring, toolQuery(legacy, 'OLD_TOKEN'))).toEqual({ OLD_TOKEN: 'legacy-tool-secret' });
  const encryptor = llmRuntime(s.ctx).encryptor;
  expect((await loadDecryptedLlmCredentials(s.ctx.models.LlmCredential, encryptor, t.tenantId, t.projectId)).map((c) => c.apiKey)).toEqual(['sk-openai-under-a']);
  expect((await loadDecryptedLlmCredentials(s.ctx.models.LlmCredential, encryptor, legacy.tenantId, legacy.projectId)).map((c) => c.apiKey)).toEqual(['sk-legacy-credential']);
  // The signing secret opens: the test message is signed with it, as the receiver verifies.
  const before = receiver.received.length;
  const sent = await client(s.baseUrl).post(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${subscriptionId}/test`, { key: t.adminKey });
  expect(sent.status).toBe(200);
  const got = receiver.received[before]!;
  expect(verifyAblSignature(signingSecret, got.raw, got.headers['x-abl-timestamp'] as string, got.headers['x-abl-signature'] as string)).toBe(true);
}

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await stack?.close();
  await receiver.close();
});

it('keeps every secret readable through a rotation from A to B, re-encrypts under B, and reads with A dropped', async () => {
  // 1. The deployment runs with A alone.
  let s = await stackWith(A);
  t = await seedTenant(s.ctx);
  legacy = await seedTenant(s.ctx);
  const api = client(s.baseUrl);
  expect((await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: t.projectId, toolName: 'crm', secretKey: 'CRM_TOKEN', value: 'crm-token-under-a', allowedHosts: ['crm.example.com'] } })).status).toBe(201);
  expect((await api.put(`/api/projects/${t.projectId}/llm-credentials/openai`, { key: t.adminKey, json: { apiKey: 'sk-openai-under-a' } })).status).toBe(201);
  const sub = await api.post<{ subscription: { id: string }; signingSecret: string }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions`, {
    key: t.adminKey,
    json: { name: 'Front end', callbackUrl: `${receiver.origin}/hooks` },
  });
  expect(sub.status).toBe(201);
  [subscriptionId, signingSecret] = [sub.body.subscription.id, sub.body.signingSecret];
  // Every ciphertext names its master key.
  expect((await s.ctx.models.TenantDataKey.findOne({ tenantId: t.tenantId }).lean())?.masterKeyId).toBe('ka');
  expect((await s.ctx.models.LlmCredential.findOne({ tenantId: t.tenantId }).lean())?.apiKey).toMatchObject({ kid: 'ka' });
  codecPayloadUnderA = (await s.ctx.payloadCodec!.encode([{ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('"history"') }]))[0]!;

  // Values an older release wrote: the master key used as the wrapping key itself (no derivation),
  // and a per-tenant value with no key id at all.
  const dataKey = newDataKey();
  await s.ctx.models.TenantDataKey.create({ tenantId: legacy.tenantId, masterKeyId: 'ka', wrapped: seal(keyA, `switchboard/tenant-data-key/v1/${legacy.tenantId}/ka`, dataKey) });
  const place = { tenantId: legacy.tenantId, projectId: legacy.projectId, toolName: 'crm', secretKey: 'OLD_TOKEN', environment: 'dev' };
  await s.ctx.models.ToolSecret.create({ ...place, value: seal(dataKey, toolSecretAad(place), Buffer.from('legacy-tool-secret')) });
  await s.ctx.models.LlmCredential.create({ tenantId: legacy.tenantId, projectId: legacy.projectId, provider: 'openai', apiKey: legacyValue(keyA, legacy.tenantId, 'llm-credential', 'sk-legacy-credential') });
  await readEverything(s);

  // 2. B is put first, A kept for decryption: everything reads, and new values go under B.
  s = await stackWith(`${B},${A}`);
  await readEverything(s);
  const other = await seedTenant(s.ctx);
  expect((await client(s.baseUrl).put(`/api/projects/${other.projectId}/llm-credentials/openai`, { key: other.adminKey, json: { apiKey: 'sk-under-b' } })).status).toBe(201);
  expect((await s.ctx.models.LlmCredential.findOne({ tenantId: other.tenantId }).lean())?.apiKey).toMatchObject({ kid: 'kb' });
  expect(await s.ctx.payloadCodec!.decode([codecPayloadUnderA])).toHaveLength(1);

  // 3. The re-encrypt command moves everything under B, tenant by tenant; run again, it changes nothing.
  const first = await reencrypt(`${B},${A}`);
  expect(first.err).not.toMatch(/failed/);
  expect(first.status).toBe(0);
  const summary = JSON.parse(first.out);
  expect(summary).toMatchObject({ masterKeyId: 'kb', failed: [] });
  expect(summary.tenants).toBeGreaterThanOrEqual(3);
  expect(summary.dataKeys).toEqual({ rewrapped: 2, alreadyCurrent: 0 });
  expect(summary.values).toEqual({ reencrypted: 2, alreadyCurrent: 1 });
  const second = JSON.parse((await reencrypt(`${B},${A}`)).out);
  expect(second).toMatchObject({ dataKeys: { rewrapped: 0, alreadyCurrent: 2 }, values: { reencrypted: 0, alreadyCurrent: 3 }, failed: [] });
  expect(await s.ctx.models.TenantDataKey.countDocuments({ masterKeyId: { $ne: 'kb' } })).toBe(0);
  expect(await s.ctx.models.LlmCredential.countDocuments({ 'apiKey.kid': { $ne: 'kb' } })).toBe(0);

  // 4. A dropped: everything still reads.
  s = await stackWith(B);
  await readEverything(s);

  // 5. A ciphertext under a key the ring does not list fails, naming that key.
  const stranger = await seedTenant(s.ctx);
  await s.ctx.models.LlmCredential.create({ tenantId: stranger.tenantId, projectId: stranger.projectId, provider: 'openai', apiKey: { ...(await s.ctx.models.LlmCredential.findOne({ tenantId: t.tenantId }).lean())!.apiKey, kid: 'kz' } });
  await expect(loadDecryptedLlmCredentials(s.ctx.models.LlmCredential, llmRuntime(s.ctx).encryptor, stranger.tenantId, stranger.projectId)).rejects.toThrow(
    /master key "kz", which ENCRYPTION_KEYS does not list/,
  );
  await s.ctx.models.TenantDataKey.create({ tenantId: stranger.tenantId, masterKeyId: 'kz', scheme: 2, wrapped: seal(randomBytes(32), 'x', newDataKey()) });
  const failed = await reencrypt(B);
  expect(failed.status).toBe(1);
  expect(JSON.parse(failed.out).failed).toEqual([{ tenantId: stranger.tenantId, error: expect.stringMatching(/master key "kz", which ENCRYPTION_KEYS does not list/) }]);
  await expect(s.ctx.payloadCodec!.decode([codecPayloadUnderA])).rejects.toThrow(/key "master-ka", which is not in/);
});

it('keys each scheme with its own derived key, never a root key itself', async () => {
  const s = await stackWith(A);
  const owner = await seedTenant(s.ctx);
  const api = client(s.baseUrl);
  expect((await api.post('/api/tool-secrets', { key: owner.adminKey, json: { projectId: owner.projectId, toolName: 'crm', secretKey: 'K', value: 'v-1', allowedHosts: ['crm.example.com'] } })).status).toBe(201);
  // The tenant's data key is not wrapped by the master key itself: A alone opens it under no additional data.
  const stored = (await s.ctx.models.TenantDataKey.findOne({ tenantId: owner.tenantId }).lean())!;
  for (const version of ['v1', 'v2']) {
    expect(() => unseal(keyA, `switchboard/tenant-data-key/${version}/${owner.tenantId}/ka`, stored.wrapped)).toThrow();
  }
  // The operator session cookie is not an HMAC under PLATFORM_ADMIN_TOKEN itself: one forged so is refused.
  const token = s.config.PLATFORM_ADMIN_TOKEN!;
  const decode = (cookie: string) =>
    request(s.baseUrl, 'POST', '/codec/decode', { raw: JSON.stringify({ payloads: [] }), headers: { 'content-type': 'application/json', origin: UI_ORIGIN, cookie } });
  const login = await request(s.baseUrl, 'POST', '/codec/login', { raw: new URLSearchParams({ token }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  expect((await decode(cookie)).status).toBe(200);
  const expiry = cookie.split('=')[1]!.split('.')[0]!;
  const underToken = createHmac('sha256', token).update(`codec-session:${expiry}`).digest('base64url');
  expect((await decode(`sb_codec_session=${expiry}.${underToken}`)).status).toBe(401);
});

/** A value as the former `v1` format wrote it: the master key straight into HKDF, no key id. */
function legacyValue(master: Buffer, tenantId: string, purpose: string, plaintext: string) {
  const key = Buffer.from(hkdfSync('sha256', master, Buffer.from(tenantId), Buffer.from(purpose), 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`${tenantId}:${purpose}`));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { alg: 'v1', iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

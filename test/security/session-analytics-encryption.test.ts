// Session analytics encryption per platform key, on the real API with a client-side key pair:
// answers encrypted to the key's registered public key (JWE, RSA-OAEP-256 + A256GCM, flattened,
// `application/jose+json`, `X-ABL-Encrypted: true`), errors included, 401 never; request bodies
// required as JWE to the project's key (fetched from the jwks route) when request encryption is
// on, and one not to that key or altered refused; the two switches independent; only a credential
// that manages keys, within its reach, changes them; the project's private key is stored sealed.
import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, FlattenedEncrypt, flattenedDecrypt, generateKeyPair, importJWK, type JWK, type KeyLike } from 'jose';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { scopedKey } from '../integration/telephony/recording-fixtures';
import { seedSessions } from '../integration/session-analytics/fixtures';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let reader: { key: string; keyId: string };
let manager: { key: string; keyId: string };
let clientKeys: { publicKey: KeyLike; privateKey: KeyLike; publicJwk: JWK };
let sessions: string[];

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  sessions = await seedSessions(stack.ctx, t, [{ environment: 'production', containmentType: 'escalated' }, { environment: 'dev' }]);
  reader = await scopedKey(stack.ctx, t, ['SESSIONS_LIST']);
  manager = await scopedKey(stack.ctx, t, ['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']);
  const pair = await generateKeyPair('RSA-OAEP-256', { modulusLength: 2048, extractable: true });
  clientKeys = { ...pair, publicJwk: await exportJWK(pair.publicKey) };
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const listPath = (projectId = t.projectId) => `/api/public/analytics/projects/${projectId}/sessions`;
const setEncryption = (body: Record<string, unknown>, key = manager.key, keyId = reader.keyId) =>
  api.put(`/api/public/apikeys/${keyId}/encryption`, { headers: { 'x-api-key': key }, json: body });

async function decrypted(res: { headers: Headers; body: unknown; text: string }) {
  expect(res.headers.get('x-abl-encrypted')).toBe('true');
  expect(res.headers.get('content-type')).toMatch(/^application\/jose\+json/);
  const jwe = res.body as { protected: string; encrypted_key: string; iv: string; ciphertext: string; tag: string };
  expect(Object.keys(jwe).sort()).toEqual(['ciphertext', 'encrypted_key', 'iv', 'protected', 'tag']);
  const header = JSON.parse(Buffer.from(jwe.protected, 'base64url').toString());
  expect(header).toMatchObject({ alg: 'RSA-OAEP-256', enc: 'A256GCM' });
  const { plaintext } = await flattenedDecrypt(jwe, clientKeys.privateKey);
  return JSON.parse(Buffer.from(plaintext).toString());
}

async function encryptToProject(payload: unknown, projectId = t.projectId) {
  const jwks = await api.get(`/api/public/analytics/projects/${projectId}/jwks`, { headers: { 'x-api-key': reader.key } });
  expect(jwks.status).toBe(200);
  // With response encryption on, the key set comes encrypted like every answer.
  const set = jwks.headers.get('x-abl-encrypted') ? await decrypted(jwks) : jwks.body;
  const jwk = set.keys[0];
  expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RSA-OAEP-256', use: 'enc', kid: expect.any(String) });
  expect(jwk.d).toBeUndefined();
  const key = await importJWK(jwk, 'RSA-OAEP-256');
  return new FlattenedEncrypt(Buffer.from(JSON.stringify(payload))).setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid: jwk.kid }).encrypt(key);
}

it('only a credential that manages keys changes a key\'s encryption, and only keys within its reach', async () => {
  const self = await setEncryption({ requestEncryption: false, responseEncryption: false }, reader.key);
  expect(self.status).toBe(403);
  const narrow = await scopedKey(stack.ctx, t, ['API_SCOPE_KEY_FULL']);
  const beyond = await setEncryption({ requestEncryption: false, responseEncryption: false }, narrow.key);
  expect(beyond.status).toBe(403);
  const elsewhere = await scopedKey(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId }, ['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']);
  expect((await setEncryption({ requestEncryption: false, responseEncryption: false }, elsewhere.key)).status).toBe(404);
  const privateJwk = await exportJWK(clientKeys.privateKey);
  const withPrivate = await setEncryption({ requestEncryption: false, responseEncryption: true, publicKey: privateJwk });
  expect(withPrivate.status).toBe(400);
  const noKey = await setEncryption({ requestEncryption: false, responseEncryption: true });
  expect(noKey.status).toBe(422);
  const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
  expect((await setEncryption({ requestEncryption: false, responseEncryption: true, publicKey: small })).status).toBe(400);
  const current = await api.get(`/api/public/apikeys/${reader.keyId}/encryption`, { headers: { 'x-api-key': manager.key } });
  expect(current.body.encryption).toMatchObject({ request_encryption: false, response_encryption: false, public_key_kid: null });
});

it('encrypts every answer to the registered key, errors too, and never a 401', async () => {
  const on = await setEncryption({ requestEncryption: false, responseEncryption: true, publicKey: clientKeys.publicJwk });
  expect(on.status).toBe(200);
  expect(on.body.encryption).toMatchObject({ key_id: reader.keyId, request_encryption: false, response_encryption: true, public_key_kid: expect.any(String), alg: 'RSA-OAEP-256', enc: 'A256GCM' });

  const res = await api.get(`${listPath()}?sessionIds=${sessions.join(',')}`, { headers: { 'x-api-key': reader.key } });
  expect(res.status).toBe(200);
  for (const id of sessions) expect(res.text).not.toContain(id);
  const page = await decrypted(res);
  expect(page).toMatchObject({ success: true, total: 2, hasMore: false });
  expect(page.sessions.map((s: { id: string }) => s.id).sort()).toEqual([...sessions].sort());

  const bad = await api.get(`${listPath()}?sessionIds=${sessions[0]}&status=failed`, { headers: { 'x-api-key': reader.key } });
  expect(bad.status).toBe(400);
  expect(await decrypted(bad)).toMatchObject({ success: false, error: { code: 'INVALID_STATUS', details: expect.any(Object) }, message: expect.any(String), required: null });

  const notOurs = await api.get(`${listPath(t.otherProjectId)}?sessionIds=x`, { headers: { 'x-api-key': reader.key } });
  expect(notOurs.status).toBe(404);
  expect((await decrypted(notOurs)).error.code).toBe('NOT_FOUND');

  const unauthenticated = await api.get(`${listPath()}?sessionIds=x`, { headers: { 'x-api-key': `abl_${'f'.repeat(48)}` } });
  expect(unauthenticated.status).toBe(401);
  expect(unauthenticated.headers.get('x-abl-encrypted')).toBeNull();
  expect(unauthenticated.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' }, required: null });

  // Another key of the project, without encryption, still gets clear answers: the switch is per key.
  const plainKey = await scopedKey(stack.ctx, t, ['SESSIONS_LIST']);
  const plain = await api.get(`${listPath()}?sessionIds=${sessions[0]}`, { headers: { 'x-api-key': plainKey.key } });
  expect(plain.headers.get('x-abl-encrypted')).toBeNull();
  expect(plain.body.sessions).toHaveLength(1);
});

it('with request encryption on, takes only JWE bodies to the project key; the answer is clear when response encryption is off', async () => {
  expect((await setEncryption({ requestEncryption: true, responseEncryption: false })).status).toBe(200);
  const clear = await api.post(listPath(), { headers: { 'x-api-key': reader.key }, json: { sessionIds: sessions } });
  expect(clear.status).toBe(400);
  expect(clear.headers.get('x-abl-encrypted')).toBeNull();
  expect(clear.body).toMatchObject({ success: false, error: { code: 'ENCRYPTION_REQUIRED' } });

  const jwe = await encryptToProject({ sessionIds: sessions, containmentType: ['escalated'], callerNumber: ['+14155550100', 'sip:alice@example.com'] });
  const encrypted = await api.post(listPath(), { headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' }, raw: JSON.stringify(jwe) });
  expect(encrypted.status).toBe(200);
  expect(encrypted.headers.get('x-abl-encrypted')).toBeNull();
  // The encrypted filter was applied: the caller numbers match no session here.
  expect(encrypted.body).toMatchObject({ success: true, total: 0 });
  const byContainment = await api.post(listPath(), {
    headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' },
    raw: JSON.stringify(await encryptToProject({ sessionIds: sessions, containmentType: 'escalated' })),
  });
  expect(byContainment.body.sessions.map((s: { id: string }) => s.id)).toEqual([sessions[0]]);

  // Altered, or encrypted to a key that is not the project's: refused alike, and nothing listed.
  const altered = { ...jwe, ciphertext: jwe.ciphertext.slice(0, -2) + (jwe.ciphertext.endsWith('A') ? 'BB' : 'AA') };
  const tampered = await api.post(listPath(), { headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' }, raw: JSON.stringify(altered) });
  expect(tampered.status).toBe(422);
  expect(tampered.body.error.code).toBe('INVALID_ENCRYPTED_BODY');
  const stranger = await generateKeyPair('RSA-OAEP-256', { extractable: true });
  const toStranger = await new FlattenedEncrypt(Buffer.from(JSON.stringify({ sessionIds: sessions }))).setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM' }).encrypt(stranger.publicKey);
  const wrongKey = await api.post(listPath(), { headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' }, raw: JSON.stringify(toStranger) });
  expect(wrongKey.status).toBe(422);
  expect(wrongKey.body.error.code).toBe('INVALID_ENCRYPTED_BODY');
  expect(wrongKey.text).not.toContain('"sessions"');
  const otherAlg = await new FlattenedEncrypt(Buffer.from('{}')).setProtectedHeader({ alg: 'RSA-OAEP', enc: 'A128GCM' }).encrypt(stranger.publicKey);
  const weak = await api.post(listPath(), { headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' }, raw: JSON.stringify(otherAlg) });
  expect(weak.body.error.code).toBe('INVALID_ENCRYPTED_BODY');
});

it('round-trips with both switches on: an encrypted filter in, an encrypted page out', async () => {
  expect((await setEncryption({ requestEncryption: true, responseEncryption: true, publicKey: clientKeys.publicJwk })).status).toBe(200);
  const res = await api.post(listPath(), {
    headers: { 'x-api-key': reader.key, 'content-type': 'application/jose+json' },
    raw: JSON.stringify(await encryptToProject({ sessionIds: sessions.join(','), environment: ['dev'] })),
  });
  expect(res.status).toBe(200);
  const page = await decrypted(res);
  expect(page.sessions.map((s: { id: string }) => s.id)).toEqual([sessions[1]]);
});

it("keeps the project's private key sealed at rest", async () => {
  const stored = await stack.ctx.models.SessionEncryptionKey.findOne({ tenantId: t.tenantId, projectId: t.projectId }).lean();
  expect(stored).not.toBeNull();
  const text = JSON.stringify(stored);
  expect(text).not.toMatch(/PRIVATE KEY|"d":/);
  expect(Object.keys(stored!.privateKey).sort()).toEqual(['data', 'iv', 'tag']);
  expect(Buffer.from(stored!.privateKey.data, 'base64').toString('latin1')).not.toContain('BEGIN');
});

// The codec endpoint the Temporal Web UI and CLI call: the codec server protocol over HTTP, for an
// operator only, from the configured UI origin only, under every key of the ring.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { parseKeyRing } from '../../../lib/key-ring';
import { AesGcmPayloadCodec } from '../../../lib/payload-codec';
import { startTestStack, type TestStack } from '../../support/stack';
import { client, request } from '../../support/http';

const UI_ORIGIN = 'http://localhost:8233';
const OLD_KEY = randomBytes(32).toString('base64');
const NEW_KEY = randomBytes(32).toString('base64');

let stack: TestStack;
let api: ReturnType<typeof client>;
let operator: Record<string, string>;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const jsonPayload = (value: unknown) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) });
const text = (s: string) => Buffer.from(s, 'base64').toString('utf8');

beforeAll(async () => {
  // As after a rotation: the new key first, the old one still listed to read what it wrote.
  stack = await startTestStack({ env: { PAYLOAD_CODEC_KEYS: `k2:${NEW_KEY},k1:${OLD_KEY}`, TEMPORAL_UI_ORIGIN: UI_ORIGIN } });
  api = client(stack.baseUrl);
  operator = { 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN!, 'x-namespace': 'default' };
});
afterAll(() => stack.close());

it('answers 401 without the operator credential, or with a tenant key or a wrong token', async () => {
  const body = { payloads: [jsonPayload({ a: 1 })] };
  const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer abl_0123' }, { 'x-platform-admin-token': 'x'.repeat(48) }, { authorization: `Basic ${stack.config.PLATFORM_ADMIN_TOKEN}` }];
  for (const headers of attempts) {
    for (const path of ['/codec/encode', '/codec/decode']) {
      const res = await api.post(path, { json: body, headers });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    }
  }
});

it('encodes payloads under the newest key and decodes them back (token header or Bearer)', async () => {
  const enc = await api.post('/codec/encode', { json: { payloads: [jsonPayload({ secret: 'marker-77' }), jsonPayload('two')] }, headers: operator });
  expect(enc.status).toBe(200);
  expect(enc.body.payloads).toHaveLength(2);
  for (const p of enc.body.payloads) {
    expect(text(p.metadata.encoding)).toBe('binary/encrypted');
    expect(text(p.metadata['encryption-key-id'])).toBe('k2');
    expect(text(p.data)).not.toContain('marker-77');
  }
  const dec = await api.post('/codec/decode', { json: enc.body, headers: { authorization: `Bearer ${stack.config.PLATFORM_ADMIN_TOKEN}` } });
  expect(dec.status).toBe(200);
  expect(dec.body).toEqual({ payloads: [jsonPayload({ secret: 'marker-77' }), jsonPayload('two')] });
});

it('decodes what the old key wrote after a new key was put first; a clear payload passes through', async () => {
  const before = new AesGcmPayloadCodec(parseKeyRing(`k1:${OLD_KEY}`));
  const [old] = await before.encode([defaultPayloadConverter.toPayload({ written: 'before rotation' })!]);
  const wire = { metadata: Object.fromEntries(Object.entries(old!.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])), data: Buffer.from(old!.data!).toString('base64') };
  expect(text(wire.metadata['encryption-key-id']!)).toBe('k1');
  const res = await api.post('/codec/decode', { json: { payloads: [wire, jsonPayload('clear')] }, headers: operator });
  expect(res.status).toBe(200);
  expect(JSON.parse(text(res.body.payloads[0].data))).toEqual({ written: 'before rotation' });
  expect(res.body.payloads[1]).toEqual(jsonPayload('clear'));
});

it('answers 422 for an altered payload or a key that is not configured, 400 for a body that is not payloads', async () => {
  const enc = await api.post('/codec/encode', { json: { payloads: [jsonPayload('x')] }, headers: operator });
  const data = Buffer.from(enc.body.payloads[0].data, 'base64');
  data[15] = data[15]! ^ 1;
  const tampered = await api.post('/codec/decode', { json: { payloads: [{ ...enc.body.payloads[0], data: data.toString('base64') }] }, headers: operator });
  expect(tampered.status).toBe(422);
  expect(tampered.body.error.message).toMatch(/failed authentication under key "k2"/);
  const unknown = await api.post('/codec/decode', { json: { payloads: [{ ...enc.body.payloads[0], metadata: { ...enc.body.payloads[0].metadata, 'encryption-key-id': b64('k0') } }] }, headers: operator });
  expect(unknown.status).toBe(422);
  expect(unknown.body.error.message).toMatch(/key "k0", which is not in PAYLOAD_CODEC_KEYS/);
  const bad = await api.post('/codec/decode', { json: { payloads: [{ data: 'not base64!' }] }, headers: operator });
  expect(bad.status).toBe(400);
});

describe('CORS', () => {
  it('allows the Temporal UI origin, with credentials, on answers and errors', async () => {
    const ok = await api.post('/codec/decode', { json: { payloads: [] }, headers: { ...operator, origin: UI_ORIGIN } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    const denied = await api.post('/codec/decode', { json: { payloads: [] }, headers: { origin: UI_ORIGIN } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
  });

  it('gives no CORS header to another origin', async () => {
    for (const origin of ['http://evil.example', 'http://127.0.0.1:8233', 'http://localhost:8234']) {
      const res = await api.post('/codec/decode', { json: { payloads: [] }, headers: { ...operator, origin } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('answers the preflight for the UI origin only', async () => {
    const preflight = (origin: string) =>
      request(stack.baseUrl, 'OPTIONS', '/codec/decode', {
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace,authorization' },
      });
    const ok = await preflight(UI_ORIGIN);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(expect.stringContaining('x-namespace'));
    expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(expect.stringContaining('authorization'));
    const other = await preflight('http://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('browser sign-in (/codec/login) for the Temporal UI', () => {
  const login = (token: string) =>
    request(stack.baseUrl, 'POST', '/codec/login', { raw: new URLSearchParams({ token }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

  it('shows a form, refuses a wrong token, and sets an HttpOnly SameSite cookie for the right one', async () => {
    const form = await request(stack.baseUrl, 'GET', '/codec/login');
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toMatch(/text\/html/);
    expect(form.text).toContain('name="token"');
    const wrong = await login('x'.repeat(48));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const right = await login(stack.config.PLATFORM_ADMIN_TOKEN!);
    expect(right.status).toBe(200);
    const cookie = right.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^sb_codec_session=\d+\.[\w-]+; Path=\/codec; HttpOnly; SameSite=Strict; Max-Age=43200/);
    expect(cookie).not.toContain(stack.config.PLATFORM_ADMIN_TOKEN!);
  });

  it('lets the cookie decode from the UI origin only, and never an altered cookie', async () => {
    const cookie = (await login(stack.config.PLATFORM_ADMIN_TOKEN!)).headers.get('set-cookie')!.split(';')[0]!;
    const enc = await api.post('/codec/encode', { json: { payloads: [jsonPayload('via cookie')] }, headers: operator });
    const decode = (headers: Record<string, string>) => api.post('/codec/decode', { json: enc.body, headers });
    const ok = await decode({ cookie, origin: UI_ORIGIN, 'x-namespace': 'default' });
    expect(ok.status).toBe(200);
    expect(ok.body.payloads[0]).toEqual(jsonPayload('via cookie'));
    // The UI's own access token beside the cookie ("pass access token" on) does not get in the way.
    expect((await decode({ cookie, origin: UI_ORIGIN, authorization: 'Bearer eyJ.oidc.token' })).status).toBe(200);
    expect((await decode({ cookie })).status).toBe(401);
    expect((await decode({ cookie, origin: 'http://localhost:5173' })).status).toBe(401);
    const [expiry, mac] = cookie.split('=')[1]!.split('.');
    expect((await decode({ cookie: `sb_codec_session=${Number(expiry) + 3600}.${mac}`, origin: UI_ORIGIN })).status).toBe(401);
  });
});

describe('without TEMPORAL_UI_ORIGIN or a codec key', () => {
  let bare: TestStack;
  beforeAll(async () => {
    bare = await startTestStack({ env: { ENCRYPTION_KEY: '' } });
  });
  afterAll(() => bare.close());

  it('allows no browser origin, and answers 503 to an operator: there is nothing to decode', async () => {
    const res = await request(bare.baseUrl, 'POST', '/codec/decode', { json: { payloads: [] }, headers: { 'x-platform-admin-token': bare.config.PLATFORM_ADMIN_TOKEN!, origin: UI_ORIGIN } });
    expect(res.status).toBe(503);
    expect(res.body.error.message).toMatch(/No payload codec key/);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

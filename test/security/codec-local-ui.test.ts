// The codec endpoint's dev-only trust of the local Temporal Web UI (CODEC_TRUST_LOCAL_UI): with it
// on, a browser on this machine showing the UI decodes payloads with no sign-in; every other caller
// (another origin, no origin, a request relayed by a proxy, a name that is not loopback, a request
// without the setting) still needs the operator credential, and the setting cannot be turned on in
// production nor for a UI that is not on loopback.
import { request as httpRequest } from 'node:http';
import { loadConfig } from '../../lib/config';
import { startTestStack, testConfig, type TestStack } from '../support/stack';
import { client } from '../support/http';

const UI_ORIGIN = 'http://localhost:8233';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (s: string) => Buffer.from(s, 'base64').toString('utf8');
const jsonPayload = (value: unknown) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) });

let trusting: TestStack;
let plain: TestStack;
let encrypted: { payloads: { metadata: Record<string, string>; data: string }[] };

beforeAll(async () => {
  trusting = await startTestStack({ env: { TEMPORAL_UI_ORIGIN: UI_ORIGIN, CODEC_TRUST_LOCAL_UI: 'true' } });
  plain = await startTestStack({ env: { TEMPORAL_UI_ORIGIN: UI_ORIGIN, ENCRYPTION_KEY: trusting.config.ENCRYPTION_KEY! } });
  const enc = await client(trusting.baseUrl).post('/codec/encode', {
    json: { payloads: [jsonPayload({ message: 'card 4242 for the invoice' })] },
    headers: { 'x-platform-admin-token': trusting.config.PLATFORM_ADMIN_TOKEN! },
  });
  expect(enc.status).toBe(200);
  encrypted = enc.body;
  expect(text(encrypted.payloads[0]!.data)).not.toContain('4242');
});
afterAll(async () => {
  await trusting?.close();
  await plain?.close();
});

/** POST /codec/decode with exactly these headers (node:http, so Host can be set as a browser would after DNS rebinding). */
function decode(baseUrl: string, headers: Record<string, string>): Promise<{ status: number; body: { payloads?: { data: string }[] }; allowOrigin: string | undefined }> {
  const url = new URL('/codec/decode', baseUrl);
  const body = JSON.stringify(encrypted);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers } }, (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (raw += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(raw), allowOrigin: res.headers['access-control-allow-origin'] as string | undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const localHost = (stack: TestStack) => `localhost:${new URL(stack.baseUrl).port}`;

it('decodes for the local Web UI with no credential when CODEC_TRUST_LOCAL_UI is on', async () => {
  const res = await decode(trusting.baseUrl, { origin: UI_ORIGIN, host: localHost(trusting) });
  expect(res.status).toBe(200);
  expect(res.allowOrigin).toBe(UI_ORIGIN);
  expect(JSON.parse(text(res.body.payloads![0]!.data))).toEqual({ message: 'card 4242 for the invoice' });
  // The encode side too (the UI encodes what an operator types to signal or start a workflow).
  const enc = await client(trusting.baseUrl).post('/codec/encode', { json: { payloads: [jsonPayload('typed in the UI')] }, headers: { origin: UI_ORIGIN } });
  expect(enc.status).toBe(200);
  expect(text(enc.body.payloads[0].metadata.encoding)).toBe('binary/encrypted');
});

it('still wants the credential from any other origin, without an origin, through a proxy, or under a non-loopback name', async () => {
  const refused: Record<string, string>[] = [
    { origin: 'http://evil.example', host: localHost(trusting) },
    { origin: 'http://127.0.0.1:8233', host: localHost(trusting) },
    { origin: 'http://localhost:8234', host: localHost(trusting) },
    { origin: 'null', host: localHost(trusting) },
    { host: localHost(trusting) },
    // A page of another site whose name now resolves to 127.0.0.1 sends its own origin, but a
    // script forging the UI's origin still names the host it reached.
    { origin: UI_ORIGIN, host: `rebound.example:${new URL(trusting.baseUrl).port}` },
    // A reverse proxy (a tunnel) on this machine relays a remote client's request from loopback.
    { origin: UI_ORIGIN, host: localHost(trusting), 'x-forwarded-for': '203.0.113.9' },
    { origin: UI_ORIGIN, host: localHost(trusting), forwarded: 'for=203.0.113.9' },
  ];
  for (const headers of refused) {
    const res = await decode(trusting.baseUrl, headers);
    expect({ headers, status: res.status }).toEqual({ headers, status: 401 });
    expect(res.body.payloads).toBeUndefined();
  }
});

it('keeps the sign-in when the setting is off (the default)', async () => {
  const res = await decode(plain.baseUrl, { origin: UI_ORIGIN, host: localHost(plain) });
  expect(res.status).toBe(401);
  expect(plain.config).toMatchObject({ CODEC_TRUST_LOCAL_UI: false });
});

describe('the setting itself', () => {
  it('refuses to start in production, for a UI not on loopback, or with no UI origin', () => {
    expect(() => testConfig({ CODEC_TRUST_LOCAL_UI: 'true', TEMPORAL_UI_ORIGIN: UI_ORIGIN, NODE_ENV: 'production' })).toThrow(/CODEC_TRUST_LOCAL_UI/);
    expect(() => testConfig({ CODEC_TRUST_LOCAL_UI: 'true', TEMPORAL_UI_ORIGIN: 'https://temporal.example.com' })).toThrow(/CODEC_TRUST_LOCAL_UI/);
    expect(() => testConfig({ CODEC_TRUST_LOCAL_UI: 'true', TEMPORAL_UI_ORIGIN: 'http://192.0.2.7:8233' })).toThrow(/CODEC_TRUST_LOCAL_UI/);
    expect(() => testConfig({ CODEC_TRUST_LOCAL_UI: 'true' })).toThrow(/CODEC_TRUST_LOCAL_UI/);
    for (const origin of ['http://localhost:8233', 'http://127.0.0.1:8233', 'http://[::1]:8233']) {
      expect(testConfig({ CODEC_TRUST_LOCAL_UI: 'true', TEMPORAL_UI_ORIGIN: origin }).CODEC_TRUST_LOCAL_UI).toBe(true);
    }
  });

  it('is off unless set', () => {
    const config = loadConfig({ MONGODB_URI: 'mongodb://127.0.0.1/x', JWT_SECRET: 'x'.repeat(32), TEMPORAL_UI_ORIGIN: UI_ORIGIN });
    expect(config.CODEC_TRUST_LOCAL_UI).toBe(false);
  });
});

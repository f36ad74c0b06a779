// Configuration is validated once, and a bad value is reported by the variable's name.
import { ConfigError, liveKitConfigured, loadConfig } from '../../../lib/config';

const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };

it('applies documented defaults', () => {
  const config = loadConfig(minimal);
  expect(config).toMatchObject({
    PORT: 3000,
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    TEMPORAL_NAMESPACE: 'default',
    RATE_LIMIT_STORE: 'mongo',
    RATE_LIMIT_REQUESTS: 100,
    RATE_LIMIT_WINDOW_SECONDS: 60,
    LOGIN_FAILURES_PER_IP_EMAIL: 10,
    LOGIN_FAILURES_PER_IP: 100,
    LOGIN_WINDOW_SECONDS: 900,
    TRUST_PROXY: ['loopback'],
    SSE_HEARTBEAT_MS: 15000,
    PUBLIC_BASE_URL: 'http://localhost:3000',
  });
});

it('names every missing or bad variable', () => {
  let error: unknown;
  try {
    loadConfig({ PORT: 'eighty', JWT_SECRET: 'short', RATE_LIMIT_STORE: 'redis' });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(ConfigError);
  const message = (error as ConfigError).message;
  expect(message).toContain('MONGODB_URI is required but not set');
  expect(message).toMatch(/PORT: /);
  expect(message).toMatch(/JWT_SECRET: must be at least 32 characters/);
  expect(message).toMatch(/RATE_LIMIT_STORE: /);
});

it('treats empty strings as unset and parses booleans and numbers', () => {
  const config = loadConfig({ ...minimal, PORT: '', TEMPORAL_TLS: 'true', RATE_LIMIT_REQUESTS: '7' });
  expect(config.PORT).toBe(3000);
  expect(config.TEMPORAL_TLS).toBe(true);
  expect(config.RATE_LIMIT_REQUESTS).toBe(7);
});

it('rejects an encryption key that is not 32 bytes', () => {
  expect(() => loadConfig({ ...minimal, ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/ENCRYPTION_KEY: must be 32 bytes/);
});

it('reads SECRET_MASTER_KEYS as a key ring and stops at start on a bad entry, naming the variable and the key', () => {
  const key = Buffer.alloc(32, 7).toString('base64');
  expect(loadConfig({ ...minimal, SECRET_MASTER_KEYS: `k2:${key},k1:${key}` }).SECRET_MASTER_KEYS).toBe(`k2:${key},k1:${key}`);
  expect(() => loadConfig({ ...minimal, SECRET_MASTER_KEYS: `k1:${Buffer.alloc(16).toString('base64')}` })).toThrow(/SECRET_MASTER_KEYS: key "k1" must be 32 bytes/);
  expect(() => loadConfig({ ...minimal, SECRET_MASTER_KEYS: `k1:${key},k1:${key}` })).toThrow(/SECRET_MASTER_KEYS: key id "k1" is listed twice/);
});

it('rejects an invalid LLM price table at start instead of pricing with the wrong numbers', () => {
  expect(() => loadConfig({ ...minimal, LLM_PRICE_TABLE: '{"gpt-x": {"input": 1}}' })).toThrow(/LLM_PRICE_TABLE: must be a JSON object/);
  expect(() => loadConfig({ ...minimal, LLM_PRICE_TABLE: 'not json' })).toThrow(/LLM_PRICE_TABLE/);
  expect(loadConfig({ ...minimal, LLM_PRICE_TABLE: '{"gpt-x": {"inputPerMillion": 1, "outputPerMillion": 2}}' }).LLM_PRICE_TABLE).toBeDefined();
});

it('refuses the blanket private-network switch for tools in production, and allows it elsewhere', () => {
  expect(() => loadConfig({ ...minimal, NODE_ENV: 'production', TOOL_ALLOW_PRIVATE_NETWORKS: 'true' })).toThrow(
    /TOOL_ALLOW_PRIVATE_NETWORKS must not be true when NODE_ENV=production/,
  );
  expect(loadConfig({ ...minimal, NODE_ENV: 'production', TOOL_ALLOW_PRIVATE_NETWORKS: 'false' }).TOOL_ALLOW_PRIVATE_NETWORKS).toBe(false);
  expect(loadConfig({ ...minimal, NODE_ENV: 'development', TOOL_ALLOW_PRIVATE_NETWORKS: 'true' }).TOOL_ALLOW_PRIVATE_NETWORKS).toBe(true);
});

it('refuses Python sandbox children without their namespaces in production, and defaults to one warm child', () => {
  expect(() => loadConfig({ ...minimal, NODE_ENV: 'production', SANDBOX_PYTHON_WITHOUT_NAMESPACES: 'true' })).toThrow(
    /SANDBOX_PYTHON_WITHOUT_NAMESPACES must not be true when NODE_ENV=production/,
  );
  const dev = loadConfig({ ...minimal, NODE_ENV: 'development', SANDBOX_PYTHON_WITHOUT_NAMESPACES: 'true' });
  expect(dev.SANDBOX_PYTHON_WITHOUT_NAMESPACES).toBe(true);
  const defaults = loadConfig(minimal);
  expect([defaults.SANDBOX_PYTHON_WARM, defaults.SANDBOX_PYTHON_MAX_CONCURRENT, defaults.SANDBOX_PYTHON_WITHOUT_NAMESPACES]).toEqual([1, 4, false]);
  expect(() => loadConfig({ ...minimal, SANDBOX_PYTHON_WARM: '-1' })).toThrow(/SANDBOX_PYTHON_WARM/);
});

it('reads the private destinations allowed for tools and LLM base URLs as canonical host:port keys, in production too', () => {
  const config = loadConfig({
    ...minimal,
    NODE_ENV: 'production',
    TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4010, Billing.Internal:8443,[::1]:80',
    LLM_ALLOWED_PRIVATE_DESTINATIONS: '[::ffff:10.0.0.5]:11434',
  });
  expect(config.TOOL_ALLOWED_PRIVATE_DESTINATIONS).toEqual(['127.0.0.1:4010', 'billing.internal:8443', '[::1]:80']);
  expect(config.LLM_ALLOWED_PRIVATE_DESTINATIONS).toEqual(['[::ffff:a00:5]:11434']);
  expect(loadConfig(minimal)).toMatchObject({ TOOL_ALLOWED_PRIVATE_DESTINATIONS: [], LLM_ALLOWED_PRIVATE_DESTINATIONS: [] });
  for (const bad of ['127.0.0.1', 'http://127.0.0.1:80', 'host:0', 'host:1:2', 'host/path:80']) {
    expect(() => loadConfig({ ...minimal, TOOL_ALLOWED_PRIVATE_DESTINATIONS: bad })).toThrow(/TOOL_ALLOWED_PRIVATE_DESTINATIONS: .* is not host:port/);
  }
});

it('bounds the HTTP server by default, and refuses a headers timeout longer than the request timeout', () => {
  expect(loadConfig(minimal)).toMatchObject({
    HTTP_HEADERS_TIMEOUT_MS: 20_000,
    HTTP_REQUEST_TIMEOUT_MS: 120_000,
    HTTP_KEEP_ALIVE_TIMEOUT_MS: 65_000,
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: 100,
  });
  expect(loadConfig({ ...minimal, HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' }).HTTP_MAX_CONNECTIONS_PER_ADDRESS).toBe(0);
  expect(() => loadConfig({ ...minimal, HTTP_HEADERS_TIMEOUT_MS: '30000', HTTP_REQUEST_TIMEOUT_MS: '10000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS \(30000\) must not exceed HTTP_REQUEST_TIMEOUT_MS \(10000\)/);
  expect(() => loadConfig({ ...minimal, HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS/);
});

it('takes the widget demo page settings together, and refuses them in production', () => {
  const demo = { WIDGET_DEMO_PUBLIC_KEY: `pk_${'a1'.repeat(24)}`, WIDGET_DEMO_PROJECT_ID: 'gol9i15cztwlc7' };
  expect(loadConfig({ ...minimal, ...demo }).WIDGET_DEMO_PUBLIC_KEY).toBe(demo.WIDGET_DEMO_PUBLIC_KEY);
  expect(() => loadConfig({ ...minimal, WIDGET_DEMO_PUBLIC_KEY: demo.WIDGET_DEMO_PUBLIC_KEY })).toThrow(/go together/);
  expect(() => loadConfig({ ...minimal, ...demo, WIDGET_DEMO_PUBLIC_KEY: 'abl_notapublickey' })).toThrow(/WIDGET_DEMO_PUBLIC_KEY: must be a public widget key/);
  expect(() => loadConfig({ ...minimal, ...demo, NODE_ENV: 'production' })).toThrow(/must not be set when NODE_ENV=production/);
});

it('takes LiveKit as URL, key and secret together, and derives the voice task queue', () => {
  const liveKit = { LIVEKIT_URL: 'wss://demo.livekit.cloud', LIVEKIT_API_KEY: 'APIkey', LIVEKIT_API_SECRET: 's'.repeat(32) };
  const none = loadConfig(minimal);
  expect(none).toMatchObject({ VOICE_MAX_ROOMS: 20, VOICE_TOKEN_TTL_SECONDS: 300, VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: 60, voiceTaskQueue: 'switchboard-voice' });
  expect(liveKitConfigured(none)).toBe(false);
  expect(liveKitConfigured(loadConfig({ ...minimal, ...liveKit }))).toBe(true);
  expect(loadConfig({ ...minimal, TEMPORAL_TASK_QUEUE: 'main', VOICE_TASK_QUEUE: 'voices' }).voiceTaskQueue).toBe('voices');
  expect(loadConfig({ ...minimal, TEMPORAL_TASK_QUEUE: 'main' }).voiceTaskQueue).toBe('main-voice');
  expect(() => loadConfig({ ...minimal, LIVEKIT_URL: liveKit.LIVEKIT_URL })).toThrow(/go together/);
  expect(() => loadConfig({ ...minimal, ...liveKit, LIVEKIT_API_SECRET: 'short' })).toThrow(/LIVEKIT_API_SECRET: must be at least 32 characters/);
  expect(() => loadConfig({ ...minimal, ...liveKit, LIVEKIT_URL: 'ftp://x.example' })).toThrow(/LIVEKIT_URL/);
  expect(() => loadConfig({ ...minimal, VOICE_TOKEN_TTL_SECONDS: '5' })).toThrow(/VOICE_TOKEN_TTL_SECONDS/);
  expect(none.VOICE_AGENT_MAX_ROOMS).toBe(4);
  expect(none.VOICE_STT_HINTS).toEqual([]);
  expect(loadConfig({ ...minimal, VOICE_STT_HINTS: ' thank you | | goodbye ' }).VOICE_STT_HINTS).toEqual(['thank you', 'goodbye']);
  expect(() => loadConfig({ ...minimal, VOICE_STT_HINTS: 'x'.repeat(201) })).toThrow(/VOICE_STT_HINTS/);
});

it('serves no phone bridge unless VOICE_BRIDGE_PORT is set, and takes its public URL as ws(s) without a query', () => {
  const none = loadConfig(minimal);
  expect(none).toMatchObject({ VOICE_BRIDGE_HOST: '0.0.0.0' });
  expect(none.VOICE_BRIDGE_PORT).toBeUndefined();
  expect(none.VOICE_BRIDGE_PUBLIC_URL).toBeUndefined();
  expect(loadConfig({ ...minimal, VOICE_BRIDGE_PORT: '3012', VOICE_BRIDGE_PUBLIC_URL: 'wss://voice.example.com/streams' })).toMatchObject({
    VOICE_BRIDGE_PORT: 3012,
    VOICE_BRIDGE_PUBLIC_URL: 'wss://voice.example.com/streams',
  });
  expect(() => loadConfig({ ...minimal, VOICE_BRIDGE_PUBLIC_URL: 'https://voice.example.com' })).toThrow(/VOICE_BRIDGE_PUBLIC_URL/);
  expect(() => loadConfig({ ...minimal, VOICE_BRIDGE_PUBLIC_URL: 'wss://voice.example.com/?token=x' })).toThrow(/VOICE_BRIDGE_PUBLIC_URL/);
  expect(() => loadConfig({ ...minimal, VOICE_BRIDGE_PORT: '70000' })).toThrow(/VOICE_BRIDGE_PORT/);
});

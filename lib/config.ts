// Process configuration: read once from the environment, validated with zod, with a clear message
// naming every bad variable. Loaders take `env` as a parameter so tests never touch process.env.
import { z } from 'zod';
import { parsePriceTable } from './price-table';
import { TrustProxySchema } from './trust-proxy';
import { parseDestinationList } from './net/destination';
import { keyRingSetting } from './key-ring';
import { masterKeyRing } from './master-keys';
import { isLoopbackName } from './net/loopback';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

/** Comma-separated `host:port` entries, kept in the canonical form requests are matched in. */
const destinationList = z.string().transform((value, ctx) => {
  try {
    return parseDestinationList(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

const McpStdioServerSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
  })
  .strict();
export type McpStdioServerConfig = z.infer<typeof McpStdioServerSchema>;

/** MCP_STDIO_SERVERS: JSON `{ "<name>": { "command": "...", "args": [...], "env": {...} } }`. */
const mcpStdioServers = z.string().transform((value, ctx): Record<string, McpStdioServerConfig> => {
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object: {"<name>": {"command": "...", "args": [...]}}' });
    return z.NEVER;
  }
  const parsed = z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/), McpStdioServerSchema).safeParse(raw);
  if (!parsed.success) {
    ctx.addIssue({ code: 'custom', message: `must be a JSON object from a name to {command, args?, env?, cwd?}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
    return z.NEVER;
  }
  return parsed.data;
});

/**
 * How long an API process may answer from what it read about an API key (ms); 0 reads the key on
 * every request. A revocation through the API or the admin CLI waits this long before it returns,
 * so it is in force on every API process once it has returned (docs/auth-and-tenancy.md). The CLI
 * reads it too, so it must be set alike for both.
 */
export const ApiKeyCacheMs = z.coerce.number().int().min(0).max(10_000).default(1000);

export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  PUBLIC_BASE_URL: z.url().optional(),
  /** Whose X-Forwarded-For gives the client's address (lib/trust-proxy.ts); loopback by default. */
  TRUST_PROXY: TrustProxySchema,

  /**
   * Prometheus metrics (docs/operations.md, "What to watch"): served at `/metrics` on a listener of
   * their own, never on PORT. METRICS_PORT is the API's (unset: no listener), WORKER_METRICS_PORT
   * the worker's (unset: none), both on METRICS_HOST (loopback by default: a scraper elsewhere
   * needs `0.0.0.0` or the pod address, and then METRICS_TOKEN or a network policy).
   */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** When set, a scrape must send `Authorization: Bearer <METRICS_TOKEN>`; others get 401. */
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  /**
   * The cluster-wide gauges (running sessions by status, task-queue backlog) query Temporal at most
   * this often (ms) per process, when scraped; scrapes in between get the last values.
   */
  METRICS_REFRESH_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),

  MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URI'),
  /** How long a query waits for a reachable server before failing (the API answers 503 then). */
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),

  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('switchboard'),
  TEMPORAL_TLS: bool.default(false),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  TEMPORAL_TLS_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().min(1).optional(),

  JWT_SECRET: z.string().min(32, 'must be at least 32 characters'),
  /**
   * Earlier JWT_SECRETs, comma-separated: they no longer sign, and still verify the tokens they
   * signed until those expire (docs/auth-and-tenancy.md, rotating the JWT secret).
   */
  JWT_PREVIOUS_SECRETS: z
    .string()
    .default('')
    .transform((text) => text.split(',').map((s) => s.trim()).filter((s) => s.length > 0))
    .pipe(z.array(z.string().min(32, 'each must be at least 32 characters')).max(10)),
  JWT_ISSUER: z.string().min(1).default('switchboard'),
  JWT_TTL_SECONDS: positiveInt.default(3600),

  PLATFORM_ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  API_KEY_CACHE_MS: ApiKeyCacheMs,

  RATE_LIMIT_STORE: z.enum(['mongo', 'memory']).default('mongo'),
  RATE_LIMIT_REQUESTS: positiveInt.default(100),
  RATE_LIMIT_WINDOW_SECONDS: positiveInt.default(60),
  /** Failed logins per client address and email per window (api/auth/login-throttle.ts). */
  LOGIN_FAILURES_PER_IP_EMAIL: positiveInt.default(10),
  /** Failed logins per client address (an IPv6 client: its /64) per window, whatever the email. */
  LOGIN_FAILURES_PER_IP: positiveInt.default(100),
  LOGIN_WINDOW_SECONDS: positiveInt.default(900),

  REQUEST_TIMEOUT_MS: positiveInt.default(30000),
  /** How long a client may take to send a request's headers (ms); then 408 and the connection closes. */
  HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(20_000),
  /**
   * How long a client may take to send a whole request, headers and body (ms); then 408 and the
   * connection closes. It bounds receiving the request only: a response (an SSE stream) goes on.
   */
  HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(120_000),
  /** How long a kept-alive connection may stay idle between requests (ms). */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(65_000),
  /** Open connections per peer address (the socket's, never X-Forwarded-For); 0: no cap. */
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(100),
  /**
   * How long a graceful stop (SIGTERM, SIGINT) lets requests in flight finish (ms). Chat streams
   * still running then end with a retryable `error` event and are recorded; other requests still
   * running are cut. The process exits at the latest 1.5 s later.
   */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(8000),

  /**
   * The longest an async tool call may wait for its callback (ms), whatever the tool's own
   * `timeout_seconds` / `timeout` says. @default 7 days
   */
  CALLBACK_MAX_WAIT_MS: positiveInt.max(30 * 24 * 3600_000).default(7 * 24 * 3600_000),

  /**
   * The master key ring (lib/master-keys.ts), `id:base64,id:base64`, newest first: the first
   * encrypts, every listed one decrypts what names it (docs/secrets.md, "Rotating the master key").
   * Each scheme (data-key wrapping, values at rest, payload codec) uses its own HKDF subkey.
   */
  ENCRYPTION_KEYS: keyRingSetting,
  /**
   * One master key (base64, 32 bytes): alone, the ring of one key `encryption-key`; beside
   * ENCRYPTION_KEYS, kept under that id for decryption only.
   */
  ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)')
    .optional(),
  /** The former name of ENCRYPTION_KEYS, read when ENCRYPTION_KEYS is unset (setting both stops the process). */
  SECRET_MASTER_KEYS: keyRingSetting,
  /**
   * Keys of the Temporal payload codec (lib/payload-codec.ts), `id:base64,id:base64`, newest first:
   * the first encrypts, all decrypt. Unset: a key derived from each master key (ENCRYPTION_KEY's: `derived-1`).
   */
  PAYLOAD_CODEC_KEYS: keyRingSetting,
  /** Origin of the Temporal Web UI allowed to call /codec/encode and /codec/decode (CORS). */
  TEMPORAL_UI_ORIGIN: z
    .url()
    .refine((v) => new URL(v).origin === v.replace(/\/$/, ''), 'must be an origin: scheme://host[:port], no path')
    .transform((v) => new URL(v).origin)
    .optional(),
  /**
   * Dev only: /codec/encode and /codec/decode answer the Web UI at TEMPORAL_UI_ORIGIN (on loopback)
   * with no operator credential, for requests from this machine (api/codec/local-ui.ts). `npm start` sets it.
   */
  CODEC_TRUST_LOCAL_UI: bool.default(false),

  /** Models behind the tiers; `provider:model` or a bare model id, e.g. `local`, `openai:gpt-4o-mini`. */
  LLM_TIER_FAST: z.string().min(1).optional(),
  LLM_TIER_BALANCED: z.string().min(1).optional(),
  LLM_TIER_POWERFUL: z.string().min(1).optional(),
  /** Platform-wide provider credentials, used when a project has none of its own. */
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  LLM_TIMEOUT_MS: positiveInt.default(60000),
  /**
   * Where the Twilio SDK sends its REST requests instead of https://api.twilio.com: the Twilio
   * fake (infra/twilio-fake/) in the dev stack and the tests. Unset: Twilio itself.
   */
  TWILIO_API_BASE_URL: z.url().optional(),
  /**
   * Lifetime of the signed media URLs the recordings list hands out (s): default 900, and a
   * larger value is capped at 3600 (docs/telephony/recordings.md).
   */
  RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS: positiveInt.default(900).transform((s) => Math.min(s, 3600)),
  /** How long a call recording is kept from its creation (days); past it, its media is no longer served. */
  RECORDING_RETENTION_DAYS: positiveInt.default(90),
  /** Voice channel connections per project; beyond, 429 CHANNEL_CONNECTION_LIMIT_REACHED (docs/telephony/connections.md). */
  CHANNEL_CONNECTIONS_MAX_PER_PROJECT: positiveInt.default(100),
  /**
   * How long a voice webhook waits for the agent's reply before answering Twilio with a pause and
   * a <Redirect> that waits again (Twilio gives a webhook about 15 s).
   */
  VOICE_REPLY_WAIT_MS: positiveInt.max(14000).default(10000),
  /** How many such redirects one turn may take before the caller is told it takes too long. */
  VOICE_REPLY_MAX_POLLS: positiveInt.max(100).default(12),
  /** Voice rooms one voice agent process attends at once (each one decodes, recognises and speaks audio). */
  VOICE_AGENT_MAX_ROOMS: positiveInt.max(1000).default(4),
  /**
   * Real-time voice (docs/voice.md): the LiveKit server or LiveKit Cloud project the voice rooms
   * live on. `npm start` runs a LiveKit server on loopback and sets all three; unset, the voice
   * session routes answer 503 and the widget offers no microphone. Set all three or none.
   */
  LIVEKIT_URL: z
    .url()
    .refine((u) => /^(wss?|https?):\/\//.test(u), 'must be a ws://, wss://, http:// or https:// URL')
    .optional(),
  LIVEKIT_API_KEY: z.string().min(1).max(200).optional(),
  /** LiveKit refuses shorter secrets outside its development mode. */
  LIVEKIT_API_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Voice rooms open at once across the whole deployment; beyond, 429 (docs/voice.md, "Limits"). */
  VOICE_MAX_ROOMS: positiveInt.max(100_000).default(20),
  /** Lifetime of the participant token a voice session hands the caller (s): it must join within it. */
  VOICE_TOKEN_TTL_SECONDS: positiveInt.min(30).max(3600).default(300),
  /**
   * How long a voice room stays open with nobody in it (s): before anyone joins, and after the
   * last participant left. LiveKit closes it then, and the voice agent leaves.
   */
  VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: positiveInt.max(86_400).default(60),
  /** The task queue the voice agent processes serve (`npm run voice-worker`); default `<TEMPORAL_TASK_QUEUE>-voice`. */
  VOICE_TASK_QUEUE: z.string().min(1).optional(),
  /**
   * The phone bridge (docs/voice.md, "Phone callers"): the port a voice agent process serves
   * Twilio Media Streams on. Unset: the process serves none, and `realtime` connections' calls
   * find no bridge. It listens on VOICE_BRIDGE_HOST (default 0.0.0.0).
   */
  VOICE_BRIDGE_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  VOICE_BRIDGE_HOST: z.string().min(1).default('0.0.0.0'),
  /**
   * How many times a phone call's Media Stream may be connected again after it dropped (its voice
   * agent process died or stopped) before the caller hears an apology and the call ends
   * (docs/voice.md, "When a stream drops"). 0: a dropped stream ends the call at once.
   */
  VOICE_STREAM_MAX_RECONNECTS: z.coerce.number().int().min(0).max(20).default(5),
  /**
   * The bridge's address as Twilio reaches it (`wss://…`, a path allowed, no query): the calls'
   * <Stream url> is this plus `/<connectionId>/<sessionId>`, and Twilio signs the upgrade over that
   * URL. Default: PUBLIC_BASE_URL with ws(s) and the path `/media-stream` (route it to the bridge).
   */
  VOICE_BRIDGE_PUBLIC_URL: z
    .url()
    .refine((u) => /^wss?:\/\/[^?#]*$/.test(u), 'must be a ws:// or wss:// URL without a query')
    .optional(),
  /**
   * The key of the outbound calls' destination blind index (HMAC-SHA256 of the normalised number;
   * base64, 32 bytes). Unset outside production: derived from the master key ring's current key
   * (a master-key rotation then leaves older calls unfindable by destination). Unset in
   * production: initiating and searching outbound calls answer 503. Never change it once calls exist.
   */
  OUTBOUND_DESTINATION_INDEX_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)')
    .optional(),
  /**
   * The HS256 key of the short-lived tokens a sandboxed code tool's memory helpers present to
   * `POST /api/v1/memory` (at least 32 characters). Unset outside production: derived from the
   * master key ring's current key. Unset in production: sandbox memory calls answer 503
   * "Sandbox auth not configured".
   */
  SANDBOX_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** How long an SDK session token from `POST /api/v1/sdk/init` is valid (docs/widget.md). @default 900 */
  SDK_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(900),
  /**
   * Dev only: with WIDGET_DEMO_PROJECT_ID, serves GET /demo, a page embedding the chat widget with
   * this public key (`npm start` seeds one and sets both). Refused when NODE_ENV=production (docs/widget.md).
   */
  WIDGET_DEMO_PUBLIC_KEY: z.string().regex(/^pk_[0-9a-f]{48}$/, 'must be a public widget key (pk_ and 48 hex digits)').optional(),
  /** The project of WIDGET_DEMO_PUBLIC_KEY. */
  WIDGET_DEMO_PROJECT_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a project id').optional(),
  /** Python sandbox children kept loaded and waiting for a call, per worker (docs/code-tools.md). @default 1 */
  SANDBOX_PYTHON_WARM: z.coerce.number().int().min(0).max(16).default(1),
  /** Python sandbox calls one worker runs at once; more wait for a slot. @default 4 */
  SANDBOX_PYTHON_MAX_CONCURRENT: positiveInt.max(64).default(4),
  /**
   * Run Python sandbox children without their own user, network and PID namespaces, for hosts that
   * cannot make them: the code can then reach the network. Refused when NODE_ENV=production.
   */
  SANDBOX_PYTHON_WITHOUT_NAMESPACES: bool.default(false),
  /** An outbound call that has not connected and heard nothing from the provider for this long ends `expired` (ms). @default 300000 */
  OUTBOUND_CALL_ABANDON_MS: positiveInt.default(300_000),
  /** A connected outbound call still live this long is hung up and ends `expired` (ms). @default 4 hours, Twilio's own limit */
  OUTBOUND_CALL_MAX_DURATION_MS: positiveInt.default(4 * 3600_000),
  /** How long the request placing a call at the provider may take before its outcome counts as unknown and is reconciled (ms). @default 10000 */
  OUTBOUND_SUBMIT_TIMEOUT_MS: positiveInt.max(120_000).default(10_000),
  /** How long a call whose submit outcome is unknown is looked for at the provider before it counts as not placed (ms). @default 60000 */
  OUTBOUND_RECONCILE_WINDOW_MS: positiveInt.default(60_000),
  /** JSON object of extra prices: { "model": { "inputPerMTok": 1, "outputPerMTok": 2 } }. */
  LLM_PRICE_TABLE: z
    .string()
    .min(2)
    .refine((v) => {
      try {
        parsePriceTable(v);
        return true;
      } catch {
        return false;
      }
    }, 'must be a JSON object of { "<model>": { "inputPerMillion": n, "outputPerMillion": n } }')
    .optional(),
  SSE_HEARTBEAT_MS: positiveInt.default(15000),
  /**
   * Who judges provider guardrails (`provider: openai`): `openai` (its moderation endpoint, with the
   * project's OpenAI credential or OPENAI_API_KEY), `local` (the offline word rules) or `auto`
   * (OpenAI when a key exists, else the offline rules; what `npm start` uses).
   */
  MODERATION_PROVIDER: z.enum(['openai', 'local', 'auto']).default('openai'),
  MODERATION_MODEL: z.string().min(1).default('omni-moderation-latest'),
  /** At most 25 s: the `moderate` activity itself may run 30 s (workflows/effects.ts). */
  MODERATION_TIMEOUT_MS: positiveInt.max(25_000).default(10000),

  /**
   * Speech providers of real-time voice (providers/voice, docs/voice.md "Speech providers"):
   * `offline` is the development pair (pocketsphinx, espeak-ng; no key, English recognition only),
   * `openai` OpenAI's audio endpoints with VOICE_OPENAI_API_KEY (else OPENAI_API_KEY), `deepgram`
   * (speech to text only) Deepgram's REST API with DEEPGRAM_API_KEY.
   */
  VOICE_STT_PROVIDER: z.enum(['offline', 'openai', 'deepgram']).default('offline'),
  VOICE_TTS_PROVIDER: z.enum(['offline', 'openai']).default('offline'),
  /** OpenAI's key and base URL for speech only; unset: OPENAI_API_KEY and OPENAI_BASE_URL. */
  VOICE_OPENAI_API_KEY: z.string().min(1).optional(),
  VOICE_OPENAI_BASE_URL: z.url().optional(),
  DEEPGRAM_API_KEY: z.string().min(1).optional(),
  /** Where Deepgram requests go instead of https://api.deepgram.com. */
  DEEPGRAM_BASE_URL: z.url().optional(),
  /** The vendor's model; unset: the adapter's default (OpenAI: gpt-4o-mini-transcribe, gpt-4o-mini-tts; Deepgram: nova-3). Not read by the offline pair. */
  VOICE_STT_MODEL: z.string().min(1).optional(),
  VOICE_TTS_MODEL: z.string().min(1).optional(),
  /**
   * The voice when an agent's voiceConfig names none, checked when the provider is made: an
   * espeak-ng voice or variant (offline; unset: the language's own) or an OpenAI voice (unset: alloy).
   */
  VOICE_TTS_VOICE: z.string().min(1).optional(),
  /** How long a vendor's speech request may take (ms; for text to speech, to its first audio). */
  VOICE_PROVIDER_TIMEOUT_MS: positiveInt.max(60_000).default(15_000),
  /**
   * Phrases the voice agent's recogniser should favour, separated by `|` (at most 200 of 200
   * characters each). The offline recogniser then decodes against exactly these phrases (a
   * grammar): a demo or a test that knows what callers say; vendors take them as hints.
   */
  VOICE_STT_HINTS: z
    .string()
    .optional()
    .transform((v) => (v ? v.split('|').map((p) => p.trim()).filter((p) => p.length > 0) : []))
    .pipe(z.array(z.string().max(200)).max(200)),

  /** Allow HTTP tools to reach private and loopback addresses (local dev only; refused in production). */
  TOOL_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Largest tool response body read (bytes); a longer one fails the call (TOOL_RESPONSE_TOO_LARGE). */
  TOOL_RESPONSE_MAX_BYTES: positiveInt.default(1024 * 1024),
  /**
   * Largest tool result kept in a session (bytes of JSON): larger results are cut, with markers,
   * before they reach workflow history, the agent, traces and remembered turns.
   */
  TOOL_RESULT_HISTORY_MAX_BYTES: z.coerce.number().int().min(1024).max(2 * 1024 * 1024).default(64 * 1024),
  /** Worker threads per worker process that run JavaScript sandbox tools at once (docs/code-tools.md). */
  SANDBOX_JS_THREADS: positiveInt.max(64).default(2),
  /** Largest result (bytes of JSON) and largest console output of one sandbox tool call. */
  SANDBOX_OUTPUT_MAX_BYTES: positiveInt.default(1024 * 1024),
  /** Ceiling on a sandbox tool's `memory_mb`: a larger value is lowered to it. */
  SANDBOX_MAX_MEMORY_MB: positiveInt.max(4096).default(512),
  /** `host:port` services HTTP tools may reach although their address is private (docs/runtime.md). */
  TOOL_ALLOWED_PRIVATE_DESTINATIONS: destinationList.default([]),
  /**
   * The stdio MCP servers this worker may start (docs/mcp-tools.md): a JSON object from a name to
   * `{command, args?, env?, cwd?}`. A project's stdio server names an entry; it never gives a command.
   */
  MCP_STDIO_SERVERS: mcpStdioServers.default({}),
  /** `host:port` services per-project LLM base URLs may point at although private (docs/llm-settings.md). */
  LLM_ALLOWED_PRIVATE_DESTINATIONS: destinationList.default([]),
  /** `host:port` receivers HTTP-async webhook callback URLs may point at although private (docs/http-async.md). */
  HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: destinationList.default([]),
  /** `host:port` receivers async agentic-app run callback URLs may point at although private (docs/agentic-app-sessions.md). */
  APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS: destinationList.default([]),
  /** HTTP-async delivery retries (docs/http-async.md "Retries"): the first wait, doubling to the cap. */
  HTTP_ASYNC_RETRY_INITIAL_MS: positiveInt.max(3600_000).default(1_000),
  HTTP_ASYNC_RETRY_MAX_INTERVAL_MS: positiveInt.max(24 * 3600_000).default(3600_000),
  /** No delivery attempt starts later than this after the first; the delivery is then failed. */
  HTTP_ASYNC_DELIVERY_WINDOW_MS: positiveInt.max(7 * 24 * 3600_000).default(24 * 3600_000),
  /** How often a delivery held by a paused subscription checks whether it was resumed. */
  HTTP_ASYNC_PAUSED_CHECK_MS: positiveInt.max(3600_000).default(30_000),
  /**
   * An HTTP-async conversation's queues (docs/http-async.md "Limits"): messages waiting for their
   * turn, and events waiting for delivery; a message past either is refused (429 QUEUE_FULL).
   */
  HTTP_ASYNC_MAX_QUEUED_MESSAGES: positiveInt.max(200).default(50),
  HTTP_ASYNC_MAX_PENDING_DELIVERIES: positiveInt.max(1000).default(200),
  /** Idle time after which a session ends (ms); ABL's session_idle_timeout overrides per agent. */
  SESSION_IDLE_TIMEOUT_MS: positiveInt.default(30 * 60 * 1000),
  /** A session's workflow continues-as-new past this many history events (or when Temporal suggests it). */
  SESSION_MAX_HISTORY_EVENTS: positiveInt.default(8000),
  /**
   * How long after a turn its transcript, trace events and summary are written to MongoDB (turns
   * finished by then go in the same write); 0 writes them before the reply. A second lets a busy
   * session share one write among several turns (docs/performance.md); reads through the API ask
   * the session to write first, so only the session list can trail by it.
   */
  SESSION_PROJECTION_FLUSH_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  /** A CSV export whose client takes nothing for this long is cut (docs/sessions-api.md). */
  SESSION_EXPORT_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  /** Session bundles (compiled agents by content hash) each worker keeps in memory. */
  SESSION_BUNDLE_CACHE_SIZE: positiveInt.default(200),
  /**
   * Worker tuning (workers/tuning.ts): workflows kept in the worker's sticky cache (about 1 MB
   * each for a session: memory against replays), and how many workflow tasks, activities and local
   * activities run at once. The defaults suit a 2-core box.
   */
  WORKER_MAX_CACHED_WORKFLOWS: positiveInt.default(1000),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: positiveInt.max(1000).default(20),
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.max(10_000).default(100),
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: positiveInt.max(1000).default(20),
  /**
   * How long Temporal waits for a worker to take a workflow task from its sticky queue (ms)
   * before handing it to any worker, which replays the workflow from its history: how soon a
   * session moves on after its worker died. Temporal's own default.
   */
  WORKER_STICKY_QUEUE_TIMEOUT_MS: positiveInt.max(600_000).default(10_000),
  /**
   * A prebuilt workflow bundle (`bundleWorkflowCode` with the worker's options,
   * `workflowBundleOptions()` of workers/workflow-bundle.ts: its payload and failure converters and
   * the modules its sessions share) the worker loads instead of bundling the workflows when it starts. Unset: bundled
   * at start.
   */
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  // OpenTelemetry traces (lib/tracing.ts, docs/observability.md "Traces"): the standard variables,
  // read here like every other setting. Off unless an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp is set.
  OTEL_SDK_DISABLED: bool.default(false),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.string().optional(),
  /** `key=value,...` headers sent with every export (a collector's credentials). */
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  /** A retired deployment's drain ends every session still on it after this long (ms). */
  DEPLOYMENT_DRAIN_TIMEOUT_MS: positiveInt.default(15 * 60 * 1000),
  /** While draining, a session with no message for this long is ended (ms). */
  DEPLOYMENT_DRAIN_IDLE_MS: positiveInt.default(60 * 1000),
  /** How often a drain looks at the deployment's sessions (ms). */
  DEPLOYMENT_DRAIN_POLL_MS: positiveInt.default(5 * 1000),
  /**
   * How often the data-retention schedule runs the sweep that enforces every project's retention
   * (hours; docs/data-lifecycle.md). The worker creates or updates the Temporal schedule
   * `data-retention/<TEMPORAL_TASK_QUEUE>` with it at start; 0: the worker leaves the schedule alone (an operator runs
   * `npm run admin -- retention-schedule` instead, or another deployment owns it).
   */
  RETENTION_SWEEP_INTERVAL_HOURS: z.coerce.number().int().min(0).max(24 * 30).default(24),

  SESSION_MESSAGES_PER_MINUTE: positiveInt.default(30),
  MAX_CONCURRENT_SESSIONS: positiveInt.default(50),
  /**
   * How often each API process recomputes every tenant's active-session count from the session
   * records (ms); 0 turns it off. The count is exact without it: it repairs what a process that
   * died in the middle of a start or an end left behind (docs/runtime.md, "Session capacity").
   */
  SESSION_CAPACITY_RECONCILE_MS: z.coerce.number().int().min(0).default(5 * 60 * 1000),
  VOICE_ROOM_RECONCILE_MS: z.coerce.number().int().min(0).default(60_000),
  /**
   * How often each API process records the end of sessions and human tasks whose workflow was
   * terminated, failed or timed out outside the platform (the Temporal Web UI, the CLI), in ms; 0 turns it off
   * (core/sessions/closed-reconciler.ts).
   */
  SESSION_RECONCILE_MS: z.coerce.number().int().min(0).default(60_000),
  /** How often each API process delivers callback claims its process did not hand over (0: off). */
  CALLBACK_CLAIM_SWEEP_MS: z.coerce.number().int().min(0).default(15_000),
  /** How often each API process closes app runs whose process stopped mid-request (0: off). */
  APP_RUN_SWEEP_MS: z.coerce.number().int().min(0).default(60_000),
  MAX_TURNS_IN_FLIGHT: positiveInt.default(200),
  /** Open (pending, assigned, in progress) human tasks per project; beyond, 429 QUEUE_FULL (docs/human-tasks.md). */
  HUMAN_TASK_MAX_OPEN_PER_PROJECT: positiveInt.default(10_000),
  /**
   * Runs of one agentic-app session in flight at once (docs/agentic-app-sessions.md); an async
   * run past it is refused with 429 QUEUE_FULL. Under Temporal's 10 updates in flight per workflow.
   */
  APP_RUN_MAX_IN_FLIGHT_PER_SESSION: positiveInt.max(8).default(5),
  /** Largest file a session takes as an attachment, in bytes (docs/sessions-api.md, "Attachments"); beyond, 413. */
  ATTACHMENT_MAX_BYTES: positiveInt.max(100 * 1024 * 1024).default(10 * 1024 * 1024),
  /** Attachments one session holds at most; beyond, 409. */
  ATTACHMENTS_MAX_PER_SESSION: positiveInt.max(1000).default(20),
  /** Estimated tokens (a text file's bytes / 4) of all of one session's attachments together; beyond, 413. */
  ATTACHMENT_MAX_TOKENS_PER_SESSION: positiveInt.default(200_000),
});

type RawConfig = z.infer<typeof ConfigSchema>;

/** Validated configuration with derived values filled in. */
export interface Config extends RawConfig {
  PUBLIC_BASE_URL: string;
  /** VOICE_TASK_QUEUE, or `<TEMPORAL_TASK_QUEUE>-voice`: where the voice room workflow schedules the attend activity. */
  voiceTaskQueue: string;
}

/** Whether real-time voice is configured: LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (loadConfig wants all three or none). */
export function liveKitConfigured(config: Pick<Config, 'LIVEKIT_URL' | 'LIVEKIT_API_KEY' | 'LIVEKIT_API_SECRET'>): boolean {
  return Boolean(config.LIVEKIT_URL && config.LIVEKIT_API_KEY && config.LIVEKIT_API_SECRET);
}

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses configuration from an environment map.
 * @throws ConfigError naming each bad or missing variable.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty strings mean "unset", as shells commonly export them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = issue.path.join('.') || '(root)';
        const missing = issue.code === 'invalid_type' && cleaned[name] === undefined;
        return missing ? `${name} is required but not set` : `${name}: ${issue.message}`;
      }),
    );
  }
  const raw = parsed.data;
  if (raw.NODE_ENV === 'production' && raw.TRUST_PROXY === true) {
    // Every client could then pick its own address, and no per-address limit would hold.
    throw new ConfigError(['TRUST_PROXY: true trusts any X-Forwarded-For; in production give a hop count or the proxies\' addresses']);
  }
  if (raw.HTTP_HEADERS_TIMEOUT_MS > raw.HTTP_REQUEST_TIMEOUT_MS) {
    // The headers are part of the request: Node's HTTP server refuses the pair.
    throw new ConfigError([`HTTP_HEADERS_TIMEOUT_MS (${raw.HTTP_HEADERS_TIMEOUT_MS}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${raw.HTTP_REQUEST_TIMEOUT_MS})`]);
  }
  if (raw.METRICS_PORT !== undefined && raw.METRICS_PORT === raw.PORT) {
    // The public port must never answer /metrics: the scrape listener is a port of its own.
    throw new ConfigError([`METRICS_PORT (${raw.METRICS_PORT}) must differ from PORT: metrics are served on a listener of their own`]);
  }
  if (raw.NODE_ENV === 'production' && raw.TOOL_ALLOW_PRIVATE_NETWORKS) {
    // The blanket switch would let any tenant's tool reach internal services and cloud metadata.
    throw new ConfigError([
      'TOOL_ALLOW_PRIVATE_NETWORKS must not be true when NODE_ENV=production; list the internal services tools may reach in TOOL_ALLOWED_PRIVATE_DESTINATIONS (host:port) instead',
    ]);
  }
  if (raw.NODE_ENV === 'production' && raw.SANDBOX_PYTHON_WITHOUT_NAMESPACES) {
    // Tenant code would reach internal services and cloud metadata from the worker's network.
    throw new ConfigError(['SANDBOX_PYTHON_WITHOUT_NAMESPACES must not be true when NODE_ENV=production: Python sandbox code would reach the network']);
  }
  if ((raw.WIDGET_DEMO_PUBLIC_KEY === undefined) !== (raw.WIDGET_DEMO_PROJECT_ID === undefined)) {
    throw new ConfigError(['WIDGET_DEMO_PUBLIC_KEY and WIDGET_DEMO_PROJECT_ID go together: set both to serve /demo, or neither']);
  }
  if (raw.NODE_ENV === 'production' && raw.WIDGET_DEMO_PUBLIC_KEY) {
    // The demo page is a dev stack's: a production API serves no page of its own.
    throw new ConfigError(['WIDGET_DEMO_PUBLIC_KEY must not be set when NODE_ENV=production: the widget demo page is for the dev stack only']);
  }
  if (raw.CODEC_TRUST_LOCAL_UI) {
    // Decoding without a credential is for one person's machine: never in production, never for a UI elsewhere.
    const host = raw.TEMPORAL_UI_ORIGIN ? new URL(raw.TEMPORAL_UI_ORIGIN).hostname : undefined;
    if (raw.NODE_ENV === 'production') throw new ConfigError(['CODEC_TRUST_LOCAL_UI must not be true when NODE_ENV=production: operators sign in at /codec/login']);
    if (!host || !isLoopbackName(host)) {
      throw new ConfigError([`CODEC_TRUST_LOCAL_UI needs TEMPORAL_UI_ORIGIN on loopback (localhost, 127.0.0.1 or [::1]), got ${raw.TEMPORAL_UI_ORIGIN ?? 'none'}`]);
    }
  }
  for (const key of ['VOICE_STT_PROVIDER', 'VOICE_TTS_PROVIDER'] as const) {
    if (raw[key] === 'openai' && !raw.VOICE_OPENAI_API_KEY && !raw.OPENAI_API_KEY) {
      throw new ConfigError([`${key}=openai needs VOICE_OPENAI_API_KEY or OPENAI_API_KEY`]);
    }
  }
  if (raw.VOICE_STT_PROVIDER === 'deepgram' && !raw.DEEPGRAM_API_KEY) throw new ConfigError(['VOICE_STT_PROVIDER=deepgram needs DEEPGRAM_API_KEY']);
  const liveKit = [raw.LIVEKIT_URL, raw.LIVEKIT_API_KEY, raw.LIVEKIT_API_SECRET].filter((v) => v !== undefined).length;
  if (liveKit !== 0 && liveKit !== 3) {
    throw new ConfigError(['LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET go together: set all three for real-time voice, or none']);
  }
  try {
    masterKeyRing(raw);
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
  // RATE_LIMIT_STORE=memory in production is allowed as an explicit single-node choice; the
  // API logs a warning about it at start (api/server.ts).
  return { ...raw, PUBLIC_BASE_URL: raw.PUBLIC_BASE_URL ?? `http://localhost:${raw.PORT}`, voiceTaskQueue: raw.VOICE_TASK_QUEUE ?? `${raw.TEMPORAL_TASK_QUEUE}-voice` };
}

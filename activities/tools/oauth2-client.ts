// `auth: oauth2_client`: the OAuth 2.0 client-credentials grant (RFC 6749 §4.4) an HTTP tool runs
// before its call. The token request goes through the same destination guard as the call, its
// secrets must allow the token URL's host, and the access token is kept in this worker's memory
// per tenant, project, environment, tool and credentials until shortly before it expires: never in
// workflow history, a trace or a log.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { type Json, type ToolIR } from '../../abl/ir';
import { blockedDestinationOf } from '../../lib/net/destination';
import { readBodyCapped } from './response-body';
import { assertSecretsMayGoTo, secretNamesIn, type SecretDestinations } from './tool-secrets';

type HttpBinding = Extract<ToolIR['binding'], { type: 'http' }>;

/** The auth_config keys of the token request, in the order they are read. */
export const OAUTH2_CLIENT_KEYS = ['token_url', 'client_id', 'client_secret', 'scope', 'audience'] as const;

/** A token is used until this long before it expires, so it does not lapse on the way. */
export const TOKEN_EXPIRY_MARGIN_MS = 30_000;
/** Tokens kept at most; the oldest goes first. */
const CACHE_MAX = 1000;
/** A token response larger than this is not read. */
const TOKEN_RESPONSE_MAX_BYTES = 64 * 1024;

const cache = new Map<string, { token: string; expiresAtMs: number }>();

const text = (value: Json | undefined): string | null => (typeof value === 'string' && value.trim() !== '' ? value : null);

export interface ClientCredentialsCall {
  tool: ToolIR;
  binding: HttpBinding;
  /** Renders an auth_config template with the call's scope ({{secrets.NAME}} included). */
  render: (template: string) => string;
  secretDestinations: SecretDestinations;
  /** Tenant, project and environment of the call; without it the token is fetched every time. */
  cacheScope?: string;
  fetch: typeof globalThis.fetch;
  timeoutMs: number;
  signal?: AbortSignal;
  now?: () => number;
}

function cacheKey(call: ClientCredentialsCall, fields: Record<string, string>): string | null {
  if (!call.cacheScope) return null;
  // The credentials are part of the key (the secret hashed), so a rotated secret gets a new token.
  const secretHash = createHash('sha256').update(fields.client_secret ?? '').digest('hex');
  return JSON.stringify([call.cacheScope, call.tool.name, fields.token_url, fields.client_id, secretHash, fields.scope ?? '', fields.audience ?? '']);
}

/** Forgets the token a call would use, after the API refused it (HTTP 401), so the next call gets a new one. */
export function forgetClientCredentialsToken(call: ClientCredentialsCall): void {
  const key = cacheKey(call, renderFields(call));
  if (key) cache.delete(key);
}

function renderFields(call: ClientCredentialsCall): Record<string, string> {
  const config = call.binding.auth_config;
  const fields: Record<string, string> = {};
  for (const key of OAUTH2_CLIENT_KEYS) {
    const template = text(config[key]);
    if (template !== null) fields[key] = call.render(template).trim();
  }
  return fields;
}

const authFailure = (tool: string, why: string, details?: Record<string, unknown>) =>
  ApplicationFailure.nonRetryable(`Tool ${tool}: OAuth2 client credentials: ${why}`, 'TOOL_AUTH_FAILED', ...(details ? [details] : []));

/** Form encoding of RFC 6749 Appendix B, used for the client id and secret in Basic auth. */
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');

/**
 * The access token for this call: from the cache while it is valid, else from the token URL.
 * @throws ApplicationFailure: TOOL_AUTH_FAILED (missing settings, refused credentials, a bad answer;
 * final), TOOL_SECRET_DESTINATION_NOT_ALLOWED, TOOL_BLOCKED, or a retryable TOOL_NETWORK /
 * TOOL_TIMEOUT / TOOL_HTTP_5XX while the token server is down.
 */
export async function clientCredentialsToken(call: ClientCredentialsCall): Promise<string> {
  const tool = call.tool.name;
  const fields = renderFields(call);
  for (const key of ['token_url', 'client_id', 'client_secret'] as const) {
    if (!fields[key]) throw authFailure(tool, `auth_config.${key} is missing or empty`);
  }
  let tokenUrl: URL;
  try {
    tokenUrl = new URL(fields.token_url!);
  } catch {
    throw authFailure(tool, 'auth_config.token_url is not a URL');
  }
  if (tokenUrl.protocol !== 'https:' && tokenUrl.protocol !== 'http:') throw authFailure(tool, `unsupported token_url scheme ${tokenUrl.protocol}`);
  const now = call.now ?? Date.now;
  const key = cacheKey(call, fields);
  const cached = key ? cache.get(key) : undefined;
  if (cached && cached.expiresAtMs > now()) return cached.token;

  // The secrets of the token request go to the token URL: each must list its host.
  const config = call.binding.auth_config;
  const sentNames = new Set<string>();
  for (const k of OAUTH2_CLIENT_KEYS) {
    const template = text(config[k]);
    if (template) secretNamesIn(template, sentNames);
  }
  assertSecretsMayGoTo(tool, sentNames, call.secretDestinations, tokenUrl);

  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (fields.scope) body.set('scope', fields.scope);
  if (fields.audience) body.set('audience', fields.audience);
  const basic = Buffer.from(`${formEncode(fields.client_id!)}:${formEncode(fields.client_secret!)}`, 'utf8').toString('base64');
  const timeout = AbortSignal.timeout(call.timeoutMs);
  let res: Response;
  try {
    res = await call.fetch(tokenUrl, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: body.toString(),
      redirect: 'manual',
      signal: call.signal ? AbortSignal.any([timeout, call.signal]) : timeout,
    });
  } catch (err) {
    const blocked = blockedDestinationOf(err);
    if (blocked) throw ApplicationFailure.nonRetryable(`Tool ${tool}: token_url: ${blocked.message}`, 'TOOL_BLOCKED');
    if (timeout.aborted) throw ApplicationFailure.retryable(`Tool ${tool}: the token endpoint did not answer within ${call.timeoutMs} ms`, 'TOOL_TIMEOUT');
    throw ApplicationFailure.retryable(`Tool ${tool}: token endpoint: ${(err as Error).message}`, 'TOOL_NETWORK');
  }
  const { text: answer, overflow } = await readBodyCapped(res, TOKEN_RESPONSE_MAX_BYTES);
  if (res.status >= 300 && res.status < 400) throw authFailure(tool, `the token endpoint answered a redirect (HTTP ${res.status}), which is not followed`);
  let parsed: Record<string, unknown> | null = null;
  try {
    const value: unknown = overflow ? null : JSON.parse(answer);
    if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as Record<string, unknown>;
  } catch {
    parsed = null;
  }
  if (res.status >= 500 || res.status === 429 || res.status === 408) throw ApplicationFailure.retryable(`Tool ${tool}: the token endpoint answered HTTP ${res.status}`, 'TOOL_HTTP_5XX', { status: res.status });
  if (!res.ok) {
    // RFC 6749 §5.2: `error` is a short ASCII code (invalid_client, invalid_scope, …); the description is not kept.
    const code = typeof parsed?.error === 'string' && /^[\x20-\x7e]{1,64}$/.test(parsed.error) ? parsed.error : null;
    throw authFailure(tool, `the token endpoint refused the request (HTTP ${res.status}${code ? `, ${code}` : ''})`, { status: res.status, ...(code ? { error: code } : {}) });
  }
  const token = typeof parsed?.access_token === 'string' ? parsed.access_token : '';
  if (!token) throw authFailure(tool, 'the token endpoint answered without an access_token');
  const tokenType = typeof parsed?.token_type === 'string' ? parsed.token_type : '';
  if (tokenType.toLowerCase() !== 'bearer') throw authFailure(tool, `the token endpoint answered token_type "${tokenType.slice(0, 32)}"; only Bearer tokens are sent`);
  const expiresIn = Number(parsed?.expires_in);
  // Without expires_in the lifetime is unknown: the token serves this call only.
  if (key && Number.isFinite(expiresIn) && expiresIn > 0) {
    const expiresAtMs = now() + expiresIn * 1000 - TOKEN_EXPIRY_MARGIN_MS;
    if (expiresAtMs > now()) {
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
      cache.set(key, { token, expiresAtMs });
    }
  }
  return token;
}

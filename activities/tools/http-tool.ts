// Runs an ABL `http` tool: builds the request from the binding (endpoint placeholders, headers,
// query, body), enforces the timeout and SSRF policy, and classifies failures so Temporal retries
// only what can succeed later (4xx is final; 5xx, 429, timeouts and network errors retry). The
// body is read up to TOOL_RESPONSE_MAX_BYTES; a longer one fails the call.
import { ApplicationFailure } from '@temporalio/activity';
import { type Json, type ToolIR } from '../../abl/ir';
import { fixedContext, renderTemplate } from '../../abl';
import { readBodyCapped } from './response-body';
import { authHeaders } from './http-auth';
import { blockedDestinationOf, destinationGuard, type Resolve } from '../../lib/net/destination';
import { withToolSpan } from '../../lib/tracing';
import { assertSecretsMayGoTo, assertVaultValuesMayGoTo, scrubFailure, scrubSecrets, type SecretDestinations } from './tool-secrets';
import type { VaultHostGrant } from '../../db/tool-vault';
import { clientCredentialsToken, forgetClientCredentialsToken, type ClientCredentialsCall } from './oauth2-client';

export interface HttpToolInput {
  tool: ToolIR;
  args: Record<string, Json>;
  timeoutMs: number;
  /** Secrets the tool's templates may reference as {{secrets.NAME}}, already resolved. */
  secrets: Record<string, string>;
  /**
   * Vault values its headers and body_template may reference as {{_secret.KEY}} (db/tool-vault.ts),
   * already read; a key missing here renders as an empty string.
   */
  vaultSecrets?: Record<string, string>;
  /** Where each of `vaultSecrets` may be sent (the credentials of the call that produced it); refused elsewhere before it is sent. */
  vaultDestinations?: Record<string, readonly VaultHostGrant[]>;
  /** Where each of `secrets` may be sent; a request carrying one elsewhere is refused before it is sent. */
  secretDestinations: SecretDestinations;
  /**
   * Tenant, project and environment of the call: an `oauth2_client` tool's access token is cached
   * under it (with the tool and its credentials) until it expires. Without it, no cache.
   */
  credentialScope?: string;
  messageMetadata?: Record<string, unknown>;
  /**
   * Fields written into the JSON body at dot-paths after it is built (an async tool's callback
   * URL and secret). A tool whose body is not a JSON object cannot carry them: a final error.
   */
  bodyFields?: Record<string, Json>;
}

type HttpBinding = Extract<ToolIR['binding'], { type: 'http' }>;

function fillPlaceholders(template: string, args: Record<string, Json>, used: Set<string>): string {
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
    if (!(name in args)) return whole;
    used.add(name);
    return encodeURIComponent(String(args[name]));
  });
}

/**
 * Renders a template of the tool with the call's arguments, secrets and message metadata, and with
 * `vault` the vault values too (headers and body_template only: nowhere else may they go).
 */
function templateRenderer(input: Pick<HttpToolInput, 'args' | 'secrets' | 'messageMetadata' | 'vaultSecrets'>, vault = false): (text: string) => string {
  const scope = { ...input.args, secrets: input.secrets, message_metadata: (input.messageMetadata ?? {}) as Json, _secret: (vault ? (input.vaultSecrets ?? {}) : {}) as Json };
  return (text: string) => renderTemplate(text, scope, fixedContext(0));
}

/** The Content-Type a body of each `body_type` is sent with, unless the tool's headers set one. */
const BODY_CONTENT_TYPE: Record<HttpBinding['body_type'], string> = {
  json: 'application/json',
  form: 'application/x-www-form-urlencoded',
  xml: 'application/xml',
  text: 'text/plain',
};

/** The request; `accessToken` is an `oauth2_client` tool's token from the client-credentials exchange. */
export function buildHttpRequest(binding: HttpBinding, input: Omit<HttpToolInput, 'secretDestinations'>, accessToken?: string): { url: URL; init: RequestInit } {
  const used = new Set<string>();
  const render = templateRenderer(input);
  const renderWithVault = templateRenderer(input, true);
  const url = new URL(fillPlaceholders(render(binding.endpoint), input.args, used));
  for (const [key, value] of Object.entries(binding.query_params)) url.searchParams.set(key, render(value));
  const headers = new Headers();
  for (const [key, value] of Object.entries(binding.headers)) headers.set(key, renderWithVault(value));
  for (const [key, value] of Object.entries(authHeaders(binding, render, accessToken))) if (!headers.has(key)) headers.set(key, value);
  const unused = Object.fromEntries(Object.entries(input.args).filter(([k]) => !used.has(k)));
  let body: string | undefined;
  const sendsBody = binding.method === 'POST' || binding.method === 'PUT' || binding.method === 'PATCH';
  if (binding.body_template) {
    body = renderWithVault(binding.body_template);
    if (!headers.has('content-type')) headers.set('content-type', BODY_CONTENT_TYPE[binding.body_type]);
  } else if (sendsBody && binding.body_type === 'form') {
    body = new URLSearchParams(Object.entries(unused).map(([key, value]): [string, string] => [key, typeof value === 'string' ? value : JSON.stringify(value)])).toString();
    headers.set('content-type', BODY_CONTENT_TYPE.form);
  } else if (sendsBody) {
    // An xml or text body needs a body_template (the compiler warns, W425): the arguments go as JSON.
    body = JSON.stringify(unused);
    headers.set('content-type', 'application/json');
  } else {
    for (const [key, value] of Object.entries(unused)) {
      url.searchParams.set(key, typeof value === 'string' ? value : JSON.stringify(value));
    }
  }
  if (input.bodyFields) body = withBodyFields(input.tool.name, body, sendsBody, input.bodyFields, headers);
  headers.set('accept', 'application/json');
  return { url, init: { method: binding.method, headers, body } };
}

/** Writes `fields` (dot-path → value) into a JSON object body, creating the objects on the way. */
function withBodyFields(tool: string, body: string | undefined, sendsBody: boolean, fields: Record<string, Json>, headers: Headers): string {
  const refuse = (why: string) => ApplicationFailure.nonRetryable(`Tool ${tool}: ${why}`, 'TOOL_BAD_REQUEST');
  if (!sendsBody) throw refuse('an async tool sends its callback URL in a JSON body, so its method must be POST, PUT or PATCH');
  let root: unknown;
  try {
    root = body === undefined || body === '' ? {} : JSON.parse(body);
  } catch {
    throw refuse('an async tool needs a JSON object body to carry its callback URL');
  }
  if (!root || typeof root !== 'object' || Array.isArray(root)) throw refuse('an async tool needs a JSON object body to carry its callback URL');
  for (const [path, value] of Object.entries(fields)) {
    const parts = path.split('.');
    let at = root as Record<string, unknown>;
    for (const part of parts.slice(0, -1)) {
      const next = at[part];
      if (next === undefined || next === null) at = at[part] = {};
      else if (typeof next === 'object' && !Array.isArray(next)) at = next as Record<string, unknown>;
      else throw refuse(`the body's "${part}" is not an object, so "${path}" cannot be written`);
    }
    at[parts[parts.length - 1]!] = value;
  }
  headers.set('content-type', 'application/json');
  return JSON.stringify(root);
}

/** The default of TOOL_RESPONSE_MAX_BYTES. */
export const DEFAULT_RESPONSE_MAX_BYTES = 1024 * 1024;

export interface HttpToolOptions {
  /** Every destination allowed (TOOL_ALLOW_PRIVATE_NETWORKS; never in production). */
  allowPrivate: boolean;
  /** `host:port` keys allowed although private (TOOL_ALLOWED_PRIVATE_DESTINATIONS). */
  allowedPrivateDestinations?: readonly string[];
  /** Name resolution for the checked connection; tests inject one. @default dns.lookup */
  resolve?: Resolve;
  signal?: AbortSignal;
  /** Largest response body read (TOOL_RESPONSE_MAX_BYTES). @default DEFAULT_RESPONSE_MAX_BYTES */
  maxResponseBytes?: number;
  /** An empty answer is an acknowledgement (an async tool's 202), returned as null, not an error. */
  emptyOk?: boolean;
}

/** Calls an HTTP tool, in a `tool.call` span when tracing is on (lib/tracing.ts). */
export function runHttpTool(input: HttpToolInput, options: HttpToolOptions): Promise<Json> {
  return withToolSpan(input.tool, () => callHttpTool(input, options));
}

async function callHttpTool(input: HttpToolInput, options: HttpToolOptions): Promise<Json> {
  const binding = input.tool.binding;
  if (binding.type !== 'http') throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} is not an http tool`, 'TOOL_UNSUPPORTED');
  // SSRF protection: the guard's connections go only to addresses its own resolution checked.
  const guard = destinationGuard({
    allowPrivateNetworks: options.allowPrivate,
    allowedPrivateDestinations: options.allowedPrivateDestinations ?? [],
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  if (binding.auth !== 'oauth2_client') return send(binding, input, options, guard.fetch);
  const exchange: ClientCredentialsCall = {
    tool: input.tool,
    binding,
    render: templateRenderer(input),
    secretDestinations: input.secretDestinations,
    ...(input.credentialScope ? { cacheScope: input.credentialScope } : {}),
    fetch: guard.fetch,
    timeoutMs: input.timeoutMs,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  // The token the secrets obtain goes to the endpoint: refuse before any exchange if they may not.
  assertSecretsMayGoTo(input.tool.name, Object.keys(input.secrets), input.secretDestinations, buildHttpRequest(binding, input, 'not-yet-exchanged').url);
  const token = await clientCredentialsToken(exchange);
  // The token is a credential like the secrets it came from: scrubbed from what the call returns or throws.
  const scrub = { access_token: token };
  try {
    return scrubSecrets(await send(binding, input, options, guard.fetch, token), scrub);
  } catch (err) {
    // Refused (revoked, or expired early): the next call fetches a new one.
    if (err instanceof ApplicationFailure && (err.details?.[0] as { status?: number } | undefined)?.status === 401) forgetClientCredentialsToken(exchange);
    throw scrubFailure(err, scrub);
  }
}

async function send(binding: HttpBinding, input: HttpToolInput, options: HttpToolOptions, guardedFetch: typeof globalThis.fetch, accessToken?: string): Promise<Json> {
  const { url, init } = buildHttpRequest(binding, input, accessToken);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: unsupported URL scheme ${url.protocol}`, 'TOOL_BAD_REQUEST');
  }
  // Every secret the tool references rides in this one request (URL, headers or body), or, for
  // oauth2_client, the token they obtained does; the URL is the final one (arguments filled in):
  // each must allow its destination.
  assertSecretsMayGoTo(input.tool.name, Object.keys(input.secrets), input.secretDestinations, url);
  assertVaultValuesMayGoTo(input.tool.name, input.vaultDestinations ?? {}, url);
  const timeout = AbortSignal.timeout(input.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  let res: Response;
  try {
    res = await guardedFetch(url, { ...init, signal, redirect: 'manual' });
  } catch (err) {
    const blocked = blockedDestinationOf(err);
    if (blocked) throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: ${blocked.message}`, 'TOOL_BLOCKED');
    if (timeout.aborted) throw ApplicationFailure.retryable(`Tool ${input.tool.name} timed out after ${input.timeoutMs} ms`, 'TOOL_TIMEOUT');
    throw ApplicationFailure.retryable(`Tool ${input.tool.name}: ${(err as Error).message}`, 'TOOL_NETWORK');
  }
  const maxBytes = options.maxResponseBytes ?? DEFAULT_RESPONSE_MAX_BYTES;
  const { text, overflow } = await readBodyCapped(res, maxBytes);
  if (res.status >= 300 && res.status < 400) {
    // Redirects are not followed: the target could be a private address the SSRF check never saw.
    throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} answered a redirect (HTTP ${res.status}), which tools do not follow`, 'TOOL_REDIRECT');
  }
  if (!res.ok) {
    const message = `Tool ${input.tool.name} answered HTTP ${res.status}`;
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) {
      // Scrubbed before it is cut, so a secret echoed across the cut leaves no part of it behind.
      throw ApplicationFailure.nonRetryable(message, 'TOOL_HTTP_4XX', { status: res.status, body: scrubSecrets(text, input.secrets).slice(0, 500) });
    }
    throw ApplicationFailure.retryable(message, 'TOOL_HTTP_5XX', { status: res.status });
  }
  if (overflow) {
    // Final: the same request would answer the same size again.
    throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} answered more than ${maxBytes} bytes (TOOL_RESPONSE_MAX_BYTES)`, 'TOOL_RESPONSE_TOO_LARGE', { maxBytes });
  }
  if (!text.trim()) {
    if (options.emptyOk) return null;
    throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} returned an empty result`, 'TOOL_EMPTY_RESULT');
  }
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

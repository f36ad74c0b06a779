// {{secrets.NAME}} in an HTTP tool: which names its templates reference (endpoint, query, headers,
// auth_config, body), resolving them inside the tool activity (never in the workflow, whose
// history would keep them), and scrubbing resolved values from whatever the call returns or
// throws, so they reach neither workflow history, the trace nor logs. A secret is sent only to the
// hosts its row names (docs/secrets.md, "Where a secret may be sent").
import { ApplicationFailure } from '@temporalio/activity';
import { type Json, type ToolIR } from '../../abl/ir';
import { type ResolvedToolSecret, type ToolSecretQuery } from '../../db/tool-secret';
import { destinationOf, isAllowedHost } from '../../lib/net/allowed-hosts';
import type { VaultHostGrant, VaultValue } from '../../db/tool-vault';

/** The environment a tool call's secrets come from while sessions carry none of their own. */
export const DEFAULT_TOOL_SECRET_ENVIRONMENT = 'dev';

/** Shorter values are not scrubbed from results: they would erase ordinary text. */
export const MIN_SCRUBBED_SECRET_LENGTH = 4;
export const SCRUBBED = '[secret]';

const BLOCK = /\{\{([\s\S]*?)\}\}|\{%([\s\S]*?)%\}/g;
const REFERENCE = /\bsecrets\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(["'])(.*?)\2\s*\])/g;

/** Adds the secret names `template` references to `into`. */
export function secretNamesIn(template: string, into: Set<string>): void {
  for (const block of template.matchAll(BLOCK)) {
    const inner = block[1] ?? block[2] ?? '';
    for (const ref of inner.matchAll(REFERENCE)) into.add(ref[1] ?? ref[3]!);
  }
}

function stringsOf(value: Json | undefined, into: string[]): void {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) value.forEach((v) => stringsOf(v, into));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => stringsOf(v, into));
}

/** Secret names an HTTP tool's templates reference, in order of first appearance. */
export function secretReferences(tool: ToolIR): string[] {
  const binding = tool.binding;
  if (binding.type !== 'http') return [];
  const templates = [binding.endpoint, ...Object.values(binding.query_params), ...Object.values(binding.headers), binding.body_template ?? ''];
  stringsOf(binding.auth_config, templates);
  const names = new Set<string>();
  for (const t of templates) secretNamesIn(t, names);
  return [...names];
}

/**
 * Every form a resolved value may take in what a call returns: as is, URL-encoded (as a path or
 * query component, and as a form field, where a space is `+`), and escaped inside a JSON string
 * (an error body that echoes the request), also with every non-ASCII character as `\uXXXX`.
 */
function scrubForms(secrets: Record<string, string>): string[] {
  const forms = new Set<string>();
  for (const value of Object.values(secrets)) {
    if (value.length < MIN_SCRUBBED_SECRET_LENGTH) continue;
    forms.add(value);
    forms.add(encodeURIComponent(value));
    forms.add(new URLSearchParams({ v: value }).toString().slice(2));
    const json = JSON.stringify(value).slice(1, -1);
    forms.add(json);
    forms.add(json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  }
  // Longest first, so a value containing another is replaced whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

function scrubWith(value: unknown, forms: string[]): unknown {
  if (typeof value === 'string') return forms.reduce((text, form) => text.split(form).join(SCRUBBED), value);
  if (Array.isArray(value)) return value.map((v) => scrubWith(v, forms));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrubWith(k, forms) as string, scrubWith(v, forms)]));
  return value;
}

/** `value` with every resolved secret (as is or URL-encoded) replaced by `[secret]`. */
export function scrubSecrets<T>(value: T, secrets: Record<string, string>): T {
  const forms = scrubForms(secrets);
  return forms.length === 0 ? value : (scrubWith(value, forms) as T);
}

/** The same failure (type, retryability) with resolved secrets scrubbed from its message and details. */
export function scrubFailure(err: unknown, secrets: Record<string, string>): unknown {
  if (scrubForms(secrets).length === 0) return err;
  if (err instanceof ApplicationFailure) {
    return ApplicationFailure.create({
      message: scrubSecrets(err.message, secrets),
      type: err.type ?? undefined,
      nonRetryable: err.nonRetryable ?? undefined,
      details: scrubSecrets(err.details ?? [], secrets) as unknown[],
    });
  }
  if (err instanceof Error) return new Error(scrubSecrets(err.message, secrets));
  return err;
}

export type ResolveToolSecrets = (query: ToolSecretQuery) => Promise<Record<string, ResolvedToolSecret>>;

/** Where each resolved secret may be sent, by name (its row id for messages). */
export type SecretDestinations = Record<string, { id: string; allowedHosts: readonly string[] }>;

/** The secrets of one call: the values for the templates, and where each may go. */
export interface CallSecrets {
  values: Record<string, string>;
  destinations: SecretDestinations;
}

/**
 * Fails the call for good (TOOL_SECRET_DESTINATION_NOT_ALLOWED), before anything is sent, when
 * one of `names` (resolved secrets the request carries) may not be sent to `url`. A secret that
 * names no hosts (stored before secrets named them) may be sent nowhere.
 */
export function assertSecretsMayGoTo(toolName: string, names: Iterable<string>, destinations: SecretDestinations, url: URL): void {
  for (const name of names) {
    const grant = destinations[name];
    const allowed = grant?.allowedHosts ?? [];
    if (allowed.length > 0 && isAllowedHost(allowed, url)) continue;
    const fix = `PUT /api/tool-secrets/${grant?.id ?? ':id'}`;
    const message =
      allowed.length === 0
        ? `Tool ${toolName}: secret "${name}" names no hosts it may be sent to; set them with ${fix} {"allowedHosts": ["${destinationOf(url)}"]} if ${destinationOf(url)} is meant to receive it`
        : `Tool ${toolName}: secret "${name}" may not be sent to ${destinationOf(url)} (its allowed hosts: ${allowed.join(', ')}); add the host with ${fix} if it is meant to receive it`;
    throw ApplicationFailure.nonRetryable(message, 'TOOL_SECRET_DESTINATION_NOT_ALLOWED', { secretKey: name, destination: destinationOf(url) });
  }
}

/**
 * Where a value produced by this call may go: the host list of every stored secret the call
 * carried and every list a vault value it read already had. A token a secret obtained is as
 * powerful as the secret where it is honoured, so it may go only where the secret may; a call
 * that carried no credential leaves its values free to go anywhere (empty).
 */
export function hostGrantsOfCall(secrets: CallSecrets, vault: Record<string, VaultValue>): VaultHostGrant[] {
  const grants = new Map<string, VaultHostGrant>();
  for (const [name, d] of Object.entries(secrets.destinations)) grants.set(`secret:${name}`, { via: `secret:${name}`, secretId: d.id, allowedHosts: [...d.allowedHosts] });
  for (const { hostGrants } of Object.values(vault)) for (const g of hostGrants) if (!grants.has(g.via)) grants.set(g.via, g);
  return [...grants.values()];
}

/**
 * Fails the call for good (TOOL_SECRET_DESTINATION_NOT_ALLOWED), before anything is sent, when a
 * vault value the request carries came from a call whose credentials may not be sent to `url`.
 */
export function assertVaultValuesMayGoTo(toolName: string, grantsByKey: Record<string, readonly VaultHostGrant[]>, url: URL): void {
  for (const [key, grants] of Object.entries(grantsByKey)) {
    for (const grant of grants) {
      if (grant.allowedHosts.length > 0 && isAllowedHost(grant.allowedHosts, url)) continue;
      const source = grant.via.startsWith('secret:') ? `secret "${grant.via.slice('secret:'.length)}"` : `vault value "${grant.via.slice('vault:'.length)}"`;
      const fix = grant.secretId ? `; add the host with PUT /api/tool-secrets/${grant.secretId} if it is meant to receive what that secret obtains` : '';
      const message = `Tool ${toolName}: vault value "${key}" was produced by a call that carried ${source}, so it may go only where that may (${grant.allowedHosts.join(', ') || 'nowhere'}), not to ${destinationOf(url)}${fix}`;
      throw ApplicationFailure.nonRetryable(message, 'TOOL_SECRET_DESTINATION_NOT_ALLOWED', { secretKey: `_secret.${key}`, destination: destinationOf(url) });
    }
  }
}

/**
 * Resolves the secrets `tool` references for one call. A missing, expired or unreadable secret
 * fails the call for good (TOOL_SECRET_UNAVAILABLE), with a message naming the secret.
 */
export async function secretsForCall(
  resolve: ResolveToolSecrets,
  call: { tenantId: string; projectId: string; tool: ToolIR; environment?: string },
): Promise<CallSecrets> {
  const names = secretReferences(call.tool);
  if (names.length === 0) return { values: {}, destinations: {} };
  let resolved: Record<string, ResolvedToolSecret>;
  try {
    resolved = await resolve({
      tenantId: call.tenantId,
      projectId: call.projectId,
      toolName: call.tool.name,
      environment: call.environment ?? DEFAULT_TOOL_SECRET_ENVIRONMENT,
      names,
    });
  } catch (err) {
    if (err instanceof Error && err.name === 'ToolSecretUnavailableError') {
      const { secretKey, problem } = err as Error & { secretKey: string; problem: string };
      throw ApplicationFailure.nonRetryable(`Tool ${call.tool.name}: ${err.message}`, 'TOOL_SECRET_UNAVAILABLE', { secretKey, problem });
    }
    throw err;
  }
  const entries = Object.entries(resolved);
  return {
    values: Object.fromEntries(entries.map(([name, s]) => [name, s.value])),
    destinations: Object.fromEntries(entries.map(([name, s]) => [name, { id: s.id, allowedHosts: s.allowedHosts }])),
  };
}

// Which moderation provider a provider guardrail gets: `provider: local` and MODERATION_PROVIDER
// =local always get the offline rules; otherwise OpenAI with the project's OpenAI LLM credential
// (its base URL through the destination rules) or the platform's OPENAI_API_KEY; with no key,
// `auto` falls back to the offline rules and `openai` (the default) answers "not configured".
import { createHash } from 'node:crypto';
import type { ProjectLlmCredential } from '../llm/runtime-target';
import { LocalModerationProvider } from './local';
import { OpenAIModerationProvider, type OpenAIModerationOptions } from './openai';
import type { ModerationProvider } from './types';

export const MODERATION_SETTINGS = ['openai', 'local', 'auto'] as const;
export type ModerationSetting = (typeof MODERATION_SETTINGS)[number];

/** The configuration variables moderation reads (a subset of lib/config's Config). */
export interface ModerationEnv {
  MODERATION_PROVIDER: ModerationSetting;
  MODERATION_MODEL: string;
  MODERATION_TIMEOUT_MS: number;
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
}

export type ModerationTarget =
  | { ok: true; provider: 'local' }
  | { ok: true; provider: 'openai'; apiKey: string; baseURL?: string; source: 'project' | 'platform' }
  | { ok: false; reason: string };

/** Pure resolution over plain data (see the module comment). */
export function resolveModerationTarget(
  asked: 'openai' | 'local',
  env: ModerationEnv,
  credentials: readonly ProjectLlmCredential[],
): ModerationTarget {
  if (asked === 'local' || env.MODERATION_PROVIDER === 'local') return { ok: true, provider: 'local' };
  const own = credentials.find((c) => c.provider === 'openai');
  if (own) return { ok: true, provider: 'openai', apiKey: own.apiKey, ...(own.baseURL ? { baseURL: own.baseURL } : {}), source: 'project' };
  if (env.OPENAI_API_KEY) {
    return { ok: true, provider: 'openai', apiKey: env.OPENAI_API_KEY, ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}), source: 'platform' };
  }
  if (env.MODERATION_PROVIDER === 'auto') return { ok: true, provider: 'local' };
  return { ok: false, reason: 'no OpenAI credential for moderation (store one for the project, set OPENAI_API_KEY, or set MODERATION_PROVIDER=auto or local)' };
}

export interface ModerationResolverDeps {
  env: ModerationEnv;
  /** Decrypted LLM credentials of the project (the OpenAI one carries moderation too). */
  loadCredentials(tenantId: string, projectId: string): Promise<readonly ProjectLlmCredential[]>;
  /** The fetch for a base URL a project set: one that enforces the destination rules (lib/net/destination). */
  projectBaseUrlFetch?: typeof globalThis.fetch;
  create?: (options: OpenAIModerationOptions) => ModerationProvider;
}

export type ResolvedModeration = { ok: true; moderator: ModerationProvider } | { ok: false; reason: string };
export type ResolveModeration = (query: { tenantId: string; projectId: string; provider: 'openai' | 'local' }) => Promise<ResolvedModeration>;

const MAX_CLIENTS = 256;

/** Resolves a guardrail's provider to a ready client; OpenAI clients are reused per key and base URL. */
export function createModerationResolver(deps: ModerationResolverDeps): ResolveModeration {
  const local = new LocalModerationProvider();
  const clients = new Map<string, ModerationProvider>();
  const create = deps.create ?? ((options: OpenAIModerationOptions) => new OpenAIModerationProvider(options));
  return async (query) => {
    // The offline rules need no credential: do not read (and decrypt) the project's.
    const credentials = query.provider === 'local' || deps.env.MODERATION_PROVIDER === 'local' ? [] : await deps.loadCredentials(query.tenantId, query.projectId);
    const target = resolveModerationTarget(query.provider, deps.env, credentials);
    if (!target.ok) return target;
    if (target.provider === 'local') return { ok: true, moderator: local };
    const guarded = target.source === 'project' && target.baseURL !== undefined && deps.projectBaseUrlFetch !== undefined;
    const keyHash = createHash('sha256').update(target.apiKey).digest('base64url');
    const key = [target.baseURL ?? '', keyHash, guarded ? 'guarded' : ''].join('\u0000');
    let moderator = clients.get(key);
    if (!moderator) {
      moderator = create({
        apiKey: target.apiKey,
        ...(target.baseURL ? { baseURL: target.baseURL } : {}),
        model: deps.env.MODERATION_MODEL,
        timeoutMs: deps.env.MODERATION_TIMEOUT_MS,
        ...(guarded ? { fetch: deps.projectBaseUrlFetch } : {}),
      });
      clients.set(key, moderator);
      if (clients.size > MAX_CLIENTS) clients.delete(clients.keys().next().value as string);
    }
    return { ok: true, moderator };
  };
}

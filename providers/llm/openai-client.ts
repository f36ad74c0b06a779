// The one way an adapter makes an OpenAI SDK client (chat, moderation, speech): the SDK loaded on
// first use, its own retries off (each caller decides what to retry), an explicit base URL so
// OPENAI_BASE_URL in the environment never redirects calls, and the SDK's timeout only a backstop
// behind the caller's own deadline (deadline.ts).
import type OpenAI from 'openai';
import { lazyModule } from '../../lib/lazy-module';
import { SDK_TIMEOUT_SLACK_MS } from './deadline';

// Loaded on first use: a process that never calls OpenAI does not pay for the SDK.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const openaiSdk = lazyModule(() => (require('openai') as { default: typeof OpenAI }).default);

export interface OpenAIClientOptions {
  apiKey: string;
  /** @default 'https://api.openai.com/v1' */
  baseURL?: string | undefined;
  /** The caller's own deadline; the SDK gives up a little after it. */
  timeoutMs: number;
  defaultHeaders?: Record<string, string> | undefined;
  fetch?: typeof globalThis.fetch | undefined;
}

export function newOpenAIClient(options: OpenAIClientOptions): OpenAI {
  const OpenAIClient = openaiSdk();
  return new OpenAIClient({
    apiKey: options.apiKey,
    baseURL: options.baseURL ?? 'https://api.openai.com/v1',
    timeout: options.timeoutMs + SDK_TIMEOUT_SLACK_MS,
    maxRetries: 0,
    ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

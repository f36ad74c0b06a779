// The HTTP-async channel's canonical session key, `http_async:<project>:<subscription>:<caller key>`
// (docs/http-async.md "Session keys"), and the id of the conversation workflow it names.
import { createHash } from 'node:crypto';

export const SESSION_KEY_PREFIX = 'http_async:';

export function canonicalSessionKey(projectId: string, subscriptionId: string, callerKey: string): string {
  return `${SESSION_KEY_PREFIX}${projectId}:${subscriptionId}:${callerKey}`;
}

export type ParsedSessionKey =
  | { kind: 'caller'; callerKey: string }
  | { kind: 'canonical'; callerKey: string }
  /** Starts like a canonical key but names another project or subscription, or no caller key. */
  | { kind: 'foreign' };

/**
 * What the caller sent: its own key (a first message), the canonical key of this project and
 * subscription (a follow-up), or a canonical-looking key of somewhere else.
 */
export function parseSessionKey(sent: string, projectId: string, subscriptionId: string): ParsedSessionKey {
  if (!sent.startsWith(SESSION_KEY_PREFIX)) return { kind: 'caller', callerKey: sent };
  const ours = canonicalSessionKey(projectId, subscriptionId, '');
  if (!sent.startsWith(ours) || sent.length === ours.length) return { kind: 'foreign' };
  return { kind: 'canonical', callerKey: sent.slice(ours.length) };
}

/** `http-async/<sha-256 of the canonical key>`: fixed length, and the caller's key stays out of ids. */
export function conversationWorkflowId(canonicalKey: string): string {
  return `http-async/${createHash('sha256').update(canonicalKey).digest('hex')}`;
}

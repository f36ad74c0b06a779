// The tool side of the SecretRef vault: which `{{_secret.key}}` a consumer's headers and
// body_template use (only keys its SECRET_ACCESS READ lists), and a producer's RESULT_SECRETS
// taken out of its result, so the value at each path goes to the vault and the result the
// workflow, the model and the trace see holds `[secret]` there instead.
import type { Json, ToolIR } from '../../abl/ir';
import type { VaultEntry, VaultHostGrant } from '../../db/tool-vault';
import { SCRUBBED, scrubSecrets } from './tool-secrets';

const PLACEHOLDER = /\{\{[^}]*?\b_secret\s*\.\s*([A-Za-z_]\w*)[^}]*\}\}/g;

/** Vault keys the tool's headers and body_template reference and its SECRET_ACCESS lets it read. */
export function vaultKeysOf(tool: ToolIR): string[] {
  const b = tool.binding;
  if (b.type !== 'http' || !tool.secret_access?.length) return [];
  const keys = new Set<string>();
  for (const text of [...Object.values(b.headers), b.body_template ?? '']) {
    for (const m of text.matchAll(PLACEHOLDER)) if (tool.secret_access.includes(m[1]!)) keys.add(m[1]!);
  }
  return [...keys];
}

function splitPath(path: string): Array<string | number> {
  const parts: Array<string | number> = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) parts.push(m[2] !== undefined ? Number(m[2]) : m[1]!);
  return parts;
}

/**
 * The producer's entries and its result without them: each path's value (text as is, anything
 * else as JSON) goes to the vault, `[secret]` takes its place, and any copy of it elsewhere in the
 * result is scrubbed too. A path the result does not have stores nothing (its consumers get an
 * empty placeholder). `hostGrants`: where the credentials the producing call carried may go.
 */
export function takeResultSecrets(tool: ToolIR, result: Json, hostGrants: VaultHostGrant[] = []): { result: Json; entries: VaultEntry[] } {
  const specs = tool.result_secrets ?? [];
  if (specs.length === 0 || result === null || typeof result !== 'object') return { result, entries: [] };
  const copy = JSON.parse(JSON.stringify(result)) as Json;
  const entries: VaultEntry[] = [];
  for (const spec of specs) {
    const parts = splitPath(spec.path);
    let parent: unknown = copy;
    for (const part of parts.slice(0, -1)) parent = parent && typeof parent === 'object' ? (parent as Record<string | number, unknown>)[part] : undefined;
    const last = parts[parts.length - 1];
    if (last === undefined || !parent || typeof parent !== 'object') continue;
    const holder = parent as Record<string | number, unknown>;
    const value = holder[last];
    if (value === undefined || value === null) continue;
    entries.push({
      key: spec.key,
      value: typeof value === 'string' ? value : JSON.stringify(value),
      producer: tool.name,
      consumers: spec.consumers,
      ttlS: spec.ttl_s,
      singleUse: spec.single_use,
      hostGrants,
    });
    holder[last] = SCRUBBED;
  }
  const values = Object.fromEntries(entries.map((e) => [e.key, e.value]));
  return { result: scrubSecrets(copy, values), entries };
}

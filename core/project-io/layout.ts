// Where each thing lives in an exported project: `agents/<name>.abl`, `tools/<name>.tools.abl`,
// plus the manifest, lockfile and deployment records, and how an import path is judged (an import
// also takes a YAML agent at `agents/<name>.yaml`, and an agent's scenario tests at
// `agents/<name>.scenarios.yaml`, which it checks and does not store: docs/abl-tests.md).
import { AGENT_NAME_PATTERN, TOOL_NAME_PATTERN } from '../agents/names';

export const MANIFEST_FILE = 'manifest.json';
export const LOCKFILE_FILE = 'lockfile.json';
export const DEPLOYMENTS_FILE = 'deployments.json';

export const exportAgentPath = (name: string): string => `agents/${name}.abl`;
export const exportToolPath = (name: string): string => `tools/${name}.tools.abl`;

/** Every path an import takes, as the OpenAPI document states it (`propertyNames` of `files`). */
export const IMPORT_PATH_PATTERN =
  '^(?:agents/[A-Za-z][A-Za-z0-9_]{0,99}\\.(?:abl|yaml|yml|scenarios\\.ya?ml)|tools/[A-Za-z0-9][A-Za-z0-9_-]{0,99}\\.tools\\.abl|manifest\\.json|lockfile\\.json|deployments\\.json)$';

export type ImportPath =
  | { kind: 'agent'; name: string }
  | { kind: 'tool'; name: string }
  | { kind: 'scenarios'; agent: string }
  | { kind: 'manifest' }
  | { kind: 'lockfile' }
  | { kind: 'deployments' }
  | { kind: 'unknown' };

/** Why a path is refused before anything else is read, or null when it is safe to look at. */
export function unsafePathReason(path: string): string | null {
  if (path.includes('\u0000')) return 'contains a NUL byte';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('/')) return 'starts with "/"';
  if (path.includes('..')) return 'contains ".."';
  if (path === '') return 'is empty';
  return null;
}

export function classifyImportPath(path: string): ImportPath {
  if (path === MANIFEST_FILE) return { kind: 'manifest' };
  if (path === LOCKFILE_FILE) return { kind: 'lockfile' };
  if (path === DEPLOYMENTS_FILE) return { kind: 'deployments' };
  const scenarios = /^agents\/([^/]+)\.scenarios\.ya?ml$/.exec(path);
  if (scenarios?.[1] && AGENT_NAME_PATTERN.test(scenarios[1])) return { kind: 'scenarios', agent: scenarios[1] };
  // A YAML agent may come as agents/<name>.yaml (or .yml); export writes every agent at agents/<name>.abl.
  const agent = /^agents\/([^/]+)\.(?:abl|ya?ml)$/.exec(path);
  if (agent?.[1] && !agent[1].endsWith('.tools') && AGENT_NAME_PATTERN.test(agent[1])) return { kind: 'agent', name: agent[1] };
  const tool = /^tools\/([^/]+)\.tools\.abl$/.exec(path);
  if (tool?.[1] && TOOL_NAME_PATTERN.test(tool[1])) return { kind: 'tool', name: tool[1] };
  return { kind: 'unknown' };
}

// The vocabulary of platform-key scopes: the spec's permission names (`APP_VIEW` …), the public
// operation scopes (`outbound_calls.read`, `chat.execute` …), and what each grants internally.
// A route checks internal permissions (lib/permissions.ts); a scoped key holds the union of the
// internal permissions its granted names map to, so routes never need to know about scopes.
import { type Permission, type Principal } from './permissions';

/** The spec's permission names of a scope, each `YES` or `NO`. */
export const SCOPE_PERMISSION_NAMES = [
  'APP_VIEW',
  'APP_EDIT',
  'APP_FULL',
  'AGENTS_VIEW',
  'AGENTS_EDIT',
  'AGENTS_FULL',
  'API_SCOPE_KEY_VIEW',
  'API_SCOPE_KEY_EDIT',
  'API_SCOPE_KEY_FULL',
  'RUN_API',
  'SESSION_CREATION',
  'DOCUMENT_UPLOAD',
  'SESSION_TERMINATION',
  'SESSIONS_LIST',
] as const;

export interface OperationScope {
  /** Stable identifier, the name a scope's `permissions` object uses. */
  id: string;
  /** The label the spec (and the key settings) show. */
  label: string;
  group: 'execution' | 'management' | 'knowledge_base' | 'analytics' | 'administration';
}

const op = (id: string, label: string, group: OperationScope['group']): OperationScope => ({ id, label, group });

/**
 * Operation scopes: every scope label of the public API, under a stable identifier. The three the
 * spec names (`outbound_calls.initiate`, `outbound_calls.read`, `recordings.read`) keep theirs;
 * the rest follow the same `resource.action` form. The order is the documentation's.
 */
export const OPERATION_SCOPES: readonly OperationScope[] = [
  op('workflows.execute', 'Execute Workflows', 'execution'),
  op('workflows.invoke_draft', 'Invoke Draft Workflows', 'execution'),
  op('workflows.read', 'Read Workflows', 'execution'),
  op('chat.execute', 'Execute Chat', 'execution'),
  op('http_async.execute', 'Execute HTTP Async', 'execution'),
  op('attachments.read', 'Read Attachments', 'execution'),
  op('attachments.upload', 'Upload Attachments', 'execution'),
  op('agents.read', 'Read Agents', 'management'),
  op('agents.write', 'Write Agents', 'management'),
  op('channel_connections.read', 'Read Channel Connections', 'management'),
  op('channel_connections.write', 'Write Channel Connections', 'management'),
  op('http_async.read', 'Read HTTP Async', 'management'),
  op('http_async.manage', 'Manage HTTP Async', 'management'),
  op('deployments.read', 'Read Deployments', 'management'),
  op('deployments.write', 'Write Deployments', 'management'),
  op('solution_workbench.read', 'Read Solution Workbench', 'management'),
  op('solution_workbench.release', 'Release Solution Workbench Configurations', 'management'),
  op('sessions.read', 'Read Sessions', 'management'),
  op('sessions.write', 'Write Sessions', 'management'),
  op('sessions.close', 'Close Sessions', 'management'),
  op('recordings.read', 'Read Recordings', 'management'),
  op('outbound_calls.initiate', 'Initiate Outbound Calls', 'management'),
  op('outbound_calls.read', 'Read Outbound Calls', 'management'),
  op('releases.create', 'Create Releases', 'management'),
  op('releases.read', 'Read Releases', 'management'),
  op('releases.download', 'Download Release Bundle', 'management'),
  op('git.sync', 'Git Sync', 'management'),
  op('git.push', 'Git Push', 'management'),
  op('git.checkout', 'Git Checkout', 'management'),
  op('git.force_override', 'Git Force Override', 'management'),
  op('releases.deploy', 'Deploy Release', 'management'),
  op('releases.promote', 'Promote Release', 'management'),
  op('releases.rollback', 'Rollback', 'management'),
  op('evals.run', 'Run Evals', 'management'),
  op('deployments.health.read', 'Read Deployment Health', 'management'),
  op('audit.read', 'Read Audit Evidence', 'management'),
  op('cicd_webhooks.manage', 'Manage CI/CD Webhooks', 'management'),
  op('releases.bypass_gate', 'Bypass Gate', 'management'),
  op('releases.force_lock', 'Force Lock Release', 'management'),
  op('human_tasks.read', 'Read Human Tasks', 'management'),
  op('human_tasks.write', 'Resolve Human Tasks', 'management'),
  op('tool_secrets.read', 'Read Tool Secrets', 'management'),
  op('tool_secrets.write', 'Write Tool Secrets', 'management'),
  op('project.export', 'Export Project', 'management'),
  op('project.import', 'Import Project', 'management'),
  op('knowledge_base.query', 'Query Knowledge Base', 'knowledge_base'),
  op('knowledge_base.read', 'Read Knowledge Base', 'knowledge_base'),
  op('knowledge_base.ingest', 'Ingest Documents', 'knowledge_base'),
  op('knowledge_base.document_permissions.write', 'Write Document Permissions', 'knowledge_base'),
  op('field_intelligence.read', 'Read Field Intelligence', 'knowledge_base'),
  op('field_intelligence.preview', 'Preview Field Intelligence', 'knowledge_base'),
  op('field_intelligence.write', 'Write Field Intelligence', 'knowledge_base'),
  op('field_intelligence.refresh', 'Refresh Field Intelligence', 'knowledge_base'),
  op('field_intelligence.import', 'Import Field Intelligence', 'knowledge_base'),
  op('analytics.read', 'Read Analytics', 'analytics'),
  op('workspace.read', 'Read Workspace', 'administration'),
];

/** Every name a scope's `permissions` object can carry. */
export const SCOPE_GRANT_NAMES: readonly string[] = [...SCOPE_PERMISSION_NAMES, ...OPERATION_SCOPES.map((s) => s.id)];

const GRANT_NAME_SET = new Set(SCOPE_GRANT_NAMES);

export function isScopeGrantName(value: string): boolean {
  return GRANT_NAME_SET.has(value);
}

const APP_VIEW: Permission[] = ['agent:read', 'session:read', 'credential:read', 'human_task:read', 'api_key:read', 'http_async:read', 'channel_connection:read'];
const APP_EDIT: Permission[] = [...APP_VIEW, 'agent:write', 'session:execute', 'deployment:create', 'credential:write', 'human_task:write', 'http_async:manage', 'channel_connection:write'];

/**
 * What each name grants in terms of the permissions routes check. A name that maps to nothing
 * gates a public operation of its own (checked with `hasGrant`), or a surface not built yet.
 * `admin` is never granted by a scope: a scoped key is always bound to one app.
 */
export const GRANT_TO_PERMISSIONS: Readonly<Record<string, readonly Permission[]>> = {
  APP_VIEW,
  APP_EDIT,
  APP_FULL: [...APP_EDIT, 'project:export', 'project:import'],
  AGENTS_VIEW: ['agent:read'],
  AGENTS_EDIT: ['agent:read', 'agent:write'],
  AGENTS_FULL: ['agent:read', 'agent:write', 'deployment:create'],
  API_SCOPE_KEY_VIEW: ['api_key:read'],
  API_SCOPE_KEY_EDIT: ['api_key:read', 'api_key:write'],
  API_SCOPE_KEY_FULL: ['api_key:read', 'api_key:write', 'api_key:manage'],
  RUN_API: ['session:execute'],
  SESSION_CREATION: ['session:execute'],
  DOCUMENT_UPLOAD: [],
  SESSION_TERMINATION: ['session:execute'],
  SESSIONS_LIST: ['session:read'],
  'chat.execute': ['session:execute'],
  'http_async.execute': ['session:execute'],
  'http_async.read': ['http_async:read'],
  'http_async.manage': ['http_async:read', 'http_async:manage'],
  'channel_connections.read': ['channel_connection:read'],
  'channel_connections.write': ['channel_connection:read', 'channel_connection:write'],
  'agents.read': ['agent:read'],
  'agents.write': ['agent:read', 'agent:write'],
  'deployments.read': ['agent:read'],
  'deployments.write': ['agent:read', 'deployment:create'],
  'releases.deploy': ['deployment:create'],
  'releases.promote': ['deployment:create'],
  'releases.rollback': ['deployment:create'],
  'releases.download': ['project:export'],
  'sessions.read': ['session:read'],
  'sessions.close': ['session:execute'],
  'analytics.read': ['session:read'],
  'human_tasks.read': ['human_task:read'],
  'human_tasks.write': ['human_task:read', 'human_task:write'],
  'tool_secrets.read': ['credential:read'],
  'tool_secrets.write': ['credential:read', 'credential:write'],
  'project.export': ['project:export'],
  'project.import': ['project:import'],
};

/** The internal permissions a set of granted names adds up to. */
export function permissionsOfGrants(grants: Iterable<string>): Set<Permission> {
  const out = new Set<Permission>();
  for (const grant of grants) for (const p of GRANT_TO_PERMISSIONS[grant] ?? []) out.add(p);
  return out;
}

/**
 * Whether a key of the older, permission-style kind (no scope) holds a grant: `admin` holds every
 * one; otherwise a name is held when the key has every permission it maps to, and a name mapping
 * to nothing (e.g. `outbound_calls.read`) needs `admin`. So existing keys keep their reach.
 */
export function permissionsHoldGrant(permissions: ReadonlySet<Permission>, grant: string): boolean {
  if (permissions.has('admin')) return isScopeGrantName(grant);
  const needed = GRANT_TO_PERMISSIONS[grant];
  return !!needed && needed.length > 0 && needed.every((p) => permissions.has(p));
}

/**
 * Whether the principal holds a scope name (`outbound_calls.read`, `SESSIONS_LIST` …): a scoped
 * key by its scope, anyone else by the permissions the name maps to.
 */
export function hasGrant(principal: Principal, grant: string): boolean {
  if (principal.scope) return principal.scope.grants.has(grant);
  return permissionsHoldGrant(principal.permissions, grant);
}

/** `{ name: 'YES' | 'NO' }` for every name, from the granted ones. */
export function grantsToPermissionObject(grants: Iterable<string>): Record<string, 'YES' | 'NO'> {
  const granted = new Set(grants);
  return Object.fromEntries(SCOPE_GRANT_NAMES.map((name) => [name, granted.has(name) ? 'YES' : 'NO']));
}

// The permission vocabulary and the Principal every authenticated request carries.

export const PERMISSIONS = [
  'session:read',
  'session:execute',
  'agent:read',
  'agent:write',
  'deployment:create',
  'credential:read',
  'credential:write',
  'project:export',
  'project:import',
  /** See and follow human tasks (docs/human-tasks.md). */
  'human_task:read',
  /** Claim, assign, resolve and cancel human tasks: a reviewer needs this without agent:write. */
  'human_task:write',
  'admin',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/** How the caller proved who they are. SDK tokens, widget keys and sandbox JWTs join later. */
export type CredentialKind = 'api_key' | 'user_jwt';

export interface Principal {
  kind: CredentialKind;
  /** The API key id or the user id. */
  subjectId: string;
  tenantId: string;
  /** When set, the credential may touch only this project; others are invisible (404). */
  projectId: string | null;
  permissions: ReadonlySet<Permission>;
}

/** `admin` implies every other permission. */
export function hasPermission(principal: Principal, needed: Permission): boolean {
  return principal.permissions.has('admin') || principal.permissions.has(needed);
}

export function canSeeProject(principal: Principal, project: { tenantId: string; _id: string }): boolean {
  return project.tenantId === principal.tenantId && (principal.projectId === null || principal.projectId === project._id);
}

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
  /** See the app's scopes and keys (scope permission API_SCOPE_KEY_VIEW). */
  'api_key:read',
  /** Change a scope's permissions, from a key of that scope (API_SCOPE_KEY_EDIT). */
  'api_key:write',
  /** Create and delete keys and scopes (API_SCOPE_KEY_FULL). */
  'api_key:manage',
  /** See the project's HTTP-async webhook subscriptions and their recent deliveries (docs/http-async.md). */
  'http_async:read',
  /** Create, change, pause, rotate, test and delete HTTP-async webhook subscriptions. */
  'http_async:manage',
  /** See the project's voice channel connections, never their auth tokens (docs/telephony/connections.md). */
  'channel_connection:read',
  /** Create, change and delete voice channel connections. */
  'channel_connection:write',
  /** See and look up the tenant's contacts (docs/contacts.md). */
  'contact:read',
  /** Create, change, delete contacts and link them to sessions. */
  'contact:write',
  'admin',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/** How the caller proved who they are. SDK tokens, widget keys and sandbox JWTs join later. */
export type CredentialKind = 'api_key' | 'user_jwt' | 'sdk_token';

export interface Principal {
  kind: CredentialKind;
  /** The API key id or the user id. */
  subjectId: string;
  tenantId: string;
  /** When set, the credential may touch only this project; others are invisible (404). */
  projectId: string | null;
  permissions: ReadonlySet<Permission>;
  /**
   * A scoped platform key's scope (`as-` id) and the names it grants (lib/api-scopes.ts); absent
   * for users and permission-style keys, whose grants follow from `permissions`.
   */
  scope?: { id: string; grants: ReadonlySet<string> } | null;
  /** The environments the key may act in; absent or null means every environment. */
  environments?: readonly string[] | null;
  /** When the key stops working; absent or null means never (a user's login is not bounded here). */
  expiresAt?: Date | null;
  /** An SDK session token's end user, page origin and public key (docs/widget.md); absent otherwise. */
  sdk?: {
    endUserId: string;
    origin: string;
    publicKeyId: string;
    user?: { userId: string; email: string | null; phone: string | null; displayName: string | null } | null;
    /** Agents besides the entry agent its public key lets a page start with (core/sdk/start-agents.ts). */
    allowedAgents?: string[];
  } | null;
}

/** The `channelUId` of the sessions an SDK end user starts: they are that end user's alone. */
export const sdkChannelUId = (sdk: { endUserId: string }): string => `sdk:${sdk.endUserId}`;

/** `admin` implies every other permission. */
export function hasPermission(principal: Principal, needed: Permission): boolean {
  return principal.permissions.has('admin') || principal.permissions.has(needed);
}

/** Whether the principal may act on resources of `environment` (keys can be bound to some). */
export function canActInEnvironment(principal: Principal, environment: string): boolean {
  return !principal.environments || principal.environments.length === 0 || principal.environments.includes(environment);
}

export function canSeeProject(principal: Principal, project: { tenantId: string; _id: string }): boolean {
  return project.tenantId === principal.tenantId && (principal.projectId === null || principal.projectId === project._id);
}

// Which tools of an app need the user's OAuth authorisation (`auth: oauth2_user`), and whether
// each is authorised in an environment: its `auth_config.access_token` (or `token`) names tool
// secrets (`{{secrets.NAME}}`) that are all set there and not expired — the token the app's
// OAuth flow stored with PUT /api/tool-secrets. Until then the tool's calls fail
// (activities/tools/http-auth.ts), and Session Create answers with the IDP_Redirect shape.
import { type AgentIR, type Json } from '../../abl/ir';
import { type DeploymentDoc } from '../../db/deployment';
import { ANY_TOOL } from '../../db/tool-secret';
import { type CoreContext } from '../context';

export interface AuthProfile {
  url: string;
  idpName: string;
  isAuthorized: boolean;
  sso_type: 'oauth2';
}

const text = (value: Json | undefined): string | null => (typeof value === 'string' && value !== '' ? value : null);
const SECRET_REFERENCE = /\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The IR of every agent a new session in this scope runs: the deployment's versions, or each agent's newest. */
async function sessionAgents(ctx: CoreContext, scope: { tenantId: string; projectId: string }, deployment: DeploymentDoc | null): Promise<AgentIR[]> {
  const rows = await ctx.models.AgentVersion.find(
    deployment ? { ...scope, agentName: { $in: Object.keys(deployment.agentVersionManifest) } } : scope,
  )
    .select({ agentId: 1, agentName: 1, version: 1, seq: 1, irJson: 1 })
    .sort({ seq: -1 })
    .lean();
  const chosen = new Map<string, string>();
  for (const row of rows) {
    if (deployment ? deployment.agentVersionManifest[row.agentName] !== row.version : chosen.has(row.agentId)) continue;
    chosen.set(row.agentId, row.irJson);
  }
  return [...chosen.values()].map((ir) => JSON.parse(ir) as AgentIR);
}

/**
 * The auth profiles of the app's `oauth2_user` tools in `environment`, one per tool (by name),
 * or an empty list when no tool needs the user's authorisation.
 */
export async function oauthProfiles(ctx: CoreContext, scope: { tenantId: string; projectId: string; environment: string }, deployment: DeploymentDoc | null): Promise<AuthProfile[]> {
  const tools = new Map<string, { url: string; idpName: string; secrets: string[]; token: string | null }>();
  for (const agent of await sessionAgents(ctx, { tenantId: scope.tenantId, projectId: scope.projectId }, deployment)) {
    for (const tool of agent.tools ?? []) {
      const binding = tool.binding;
      if (binding.type !== 'http' || binding.auth !== 'oauth2_user' || tools.has(tool.name)) continue;
      const config = binding.auth_config;
      const token = text(config.access_token) ?? text(config.token);
      tools.set(tool.name, {
        url: text(config.authorization_url) ?? text(config.authorize_url) ?? text(config.auth_url) ?? '',
        idpName: text(config.idp_name) ?? text(config.provider) ?? tool.name,
        secrets: token ? [...token.matchAll(SECRET_REFERENCE)].map((m) => m[1]!) : [],
        token,
      });
    }
  }
  if (tools.size === 0) return [];
  const names = [...new Set([...tools.values()].flatMap((t) => t.secrets))];
  const rows =
    names.length === 0
      ? []
      : await ctx.models.ToolSecret.find({ tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment, secretKey: { $in: names } })
          .select({ toolName: 1, secretKey: 1, expiresAt: 1 })
          .lean();
  const now = Date.now();
  const isSet = (toolName: string, secret: string) => {
    const row = rows.find((r) => r.secretKey === secret && r.toolName === toolName) ?? rows.find((r) => r.secretKey === secret && r.toolName === ANY_TOOL);
    return row !== undefined && (!row.expiresAt || new Date(row.expiresAt).getTime() > now);
  };
  return [...tools.entries()].map(([toolName, t]) => ({
    url: t.url,
    idpName: t.idpName,
    // A literal token is authorised as written; a templated one once every secret it names is set.
    isAuthorized: t.token !== null && t.secrets.every((secret) => isSet(toolName, secret)),
    sso_type: 'oauth2' as const,
  }));
}

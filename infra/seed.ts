// Seeds the dev tenant on first start: a tenant, a project and an admin API key, written to
// .data/dev-credentials.json. Later starts reuse them (and repair them if the data was reset).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { sha256Hex } from '../lib/crypto';
import { type Models } from '../db/models';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';

export interface DevCredentials {
  tenantId: string;
  projectId: string;
  apiKey: string;
  baseUrl: string;
  /** The dev project's public widget key, for the demo page (infra/seed-widget.ts). */
  publicKey?: string;
}

const DEV_TENANT_SLUG = 'dev';
const DEV_PROJECT_SLUG = 'dev';

function readCredentials(file: string): DevCredentials | null {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DevCredentials;
  } catch {
    return null;
  }
}

/** Returns working dev credentials, creating whatever is missing. Idempotent. */
export async function ensureDevTenant(models: Models, file: string, baseUrl: string): Promise<{ credentials: DevCredentials; created: boolean }> {
  const saved = readCredentials(file);
  if (saved) {
    const key = await models.ApiKey.findOne({ keyHash: sha256Hex(saved.apiKey), revokedAt: null }).lean();
    const project = await models.Project.findOne({ _id: saved.projectId, tenantId: saved.tenantId }).lean();
    if (key && project && key.tenantId === saved.tenantId) {
      const credentials = { ...saved, baseUrl };
      if (saved.baseUrl !== baseUrl) writeFileSync(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
      return { credentials, created: false };
    }
  }
  const tenant =
    (await models.Tenant.findOne({ slug: DEV_TENANT_SLUG }).lean()) ?? (await createTenant(models, { name: 'Dev', slug: DEV_TENANT_SLUG }));
  const project =
    (await models.Project.findOne({ tenantId: tenant._id, slug: DEV_PROJECT_SLUG }).lean()) ??
    (await createProject(models, tenant._id, { name: 'Dev Project', slug: DEV_PROJECT_SLUG, description: 'Seeded by npm start' }));
  const { key } = await createApiKey(models, tenant._id, { name: 'dev admin', permissions: ['admin'] });
  const credentials: DevCredentials = { tenantId: tenant._id, projectId: project._id, apiKey: key, baseUrl };
  writeFileSync(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  return { credentials, created: true };
}

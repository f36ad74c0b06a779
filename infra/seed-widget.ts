// Seeds the dev project's public widget key, which the dev stack's demo page (GET /demo) embeds:
// allowed on the stack's own origins (localhost and 127.0.0.1 at the API's port). The key is kept
// in .data/dev-credentials.json (`publicKey`) and reused; its origins follow the port of each start.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { sha256Hex } from '../lib/crypto';
import { type Models } from '../db/models';
import { createPublicKey } from '../core/sdk/public-keys';
import { type DevCredentials } from './seed';

/** How the demo's widget looks (its key's widget settings; change them with PATCH …/public-keys/:keyId). */
export const DEMO_WIDGET = { title: 'Support desk', theme: { primaryColor: '#2456d6', launcherLabel: 'Chat with us' } };

/** The origins a browser sends from the dev stack's own pages. */
export const devStackOrigins = (apiPort: number) => [`http://localhost:${apiPort}`, `http://127.0.0.1:${apiPort}`];

/** A live public key of the dev project allowed on `origins`: the saved one (its origins set to these), else a new one. */
export async function ensureDevPublicKey(models: Models, credentials: Pick<DevCredentials, 'tenantId' | 'projectId'>, origins: string[], file?: string): Promise<{ key: string; created: boolean }> {
  const saved = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DevCredentials & { publicKey?: string }) : null;
  const scope = { tenantId: credentials.tenantId, projectId: credentials.projectId };
  if (saved?.publicKey) {
    const found = await models.PublicKey.findOneAndUpdate({ ...scope, keyHash: sha256Hex(saved.publicKey), revokedAt: null }, { $set: { allowedOrigins: origins } }).lean();
    if (found) return { key: saved.publicKey, created: false };
  }
  const { key } = await createPublicKey({ models }, scope, { name: 'dev widget demo', allowedOrigins: origins, environment: 'dev', widget: DEMO_WIDGET, createdBy: null });
  if (file && saved) writeFileSync(file, JSON.stringify({ ...saved, publicKey: key }, null, 2) + '\n', { mode: 0o600 });
  return { key, created: true };
}

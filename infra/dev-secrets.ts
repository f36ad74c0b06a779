// Secrets for the local dev stack, generated once into .data/dev-secrets.json (never committed).
// Production sets JWT_SECRET and PLATFORM_ADMIN_TOKEN itself.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newSecretToken } from '../lib/ids';

export interface DevSecrets {
  JWT_SECRET: string;
  PLATFORM_ADMIN_TOKEN: string;
}

export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = path.join(dataDir, 'dev-secrets.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (saved.JWT_SECRET && saved.PLATFORM_ADMIN_TOKEN) return saved as DevSecrets;
  }
  mkdirSync(dataDir, { recursive: true });
  const secrets: DevSecrets = { JWT_SECRET: newSecretToken(48), PLATFORM_ADMIN_TOKEN: newSecretToken(32) };
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}

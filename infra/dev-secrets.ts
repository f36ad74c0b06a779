// Secrets for the local dev stack, generated once into .data/dev-secrets.json (never committed).
// Production sets JWT_SECRET and PLATFORM_ADMIN_TOKEN itself, and LiveKit's key and secret its own.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { newSecretToken } from '../lib/ids';

export interface DevSecrets {
  JWT_SECRET: string;
  PLATFORM_ADMIN_TOKEN: string;
  ENCRYPTION_KEY: string;
  /** The secret of the dev LiveKit server's API key (`devkey`); LiveKit wants 32 characters or more. */
  LIVEKIT_API_SECRET: string;
}

export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = path.join(dataDir, 'dev-secrets.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (saved.JWT_SECRET && saved.PLATFORM_ADMIN_TOKEN && saved.ENCRYPTION_KEY && saved.LIVEKIT_API_SECRET) return saved as DevSecrets;
    // An older file lacks a newer secret: keep what exists, add the rest.
    return writeSecrets(file, saved);
  }
  mkdirSync(dataDir, { recursive: true });
  return writeSecrets(file, {});
}

function writeSecrets(file: string, saved: Partial<DevSecrets>): DevSecrets {
  const secrets: DevSecrets = {
    JWT_SECRET: saved.JWT_SECRET ?? newSecretToken(48),
    PLATFORM_ADMIN_TOKEN: saved.PLATFORM_ADMIN_TOKEN ?? newSecretToken(32),
    ENCRYPTION_KEY: saved.ENCRYPTION_KEY ?? randomBytes(32).toString('base64'),
    LIVEKIT_API_SECRET: saved.LIVEKIT_API_SECRET ?? newSecretToken(48),
  };
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}

// Identifier and credential generators: CUIDs for records, `abl_` API keys, opaque tokens.
import { randomBytes } from 'node:crypto';
import { createId, isCuid } from '@paralleldrive/cuid2';

export const newId = (): string => createId();
export { isCuid };

export const API_KEY_PREFIX = 'abl_';
/** `abl_` followed by 48 lowercase hex characters (192 random bits). */
export const API_KEY_PATTERN = /^abl_[0-9a-f]{48}$/;

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(24).toString('hex');
}

export function newSecretToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Lowercase, dash-separated slug from a display name (ASCII letters and digits only). */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[^\w\s-]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[\s_]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  return slug.slice(0, 64) || 'project';
}

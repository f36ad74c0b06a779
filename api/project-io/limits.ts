// The spec's limits for project export and import (core-api.md "Limits"), in one place so the
// routes, the body parser and the docs agree.

const MB = 1024 * 1024;

export const IMPORT_LIMITS = {
  /** The import routes' own JSON body limit (the API's standard limit is 1 MB). */
  requestBodyBytes: 60 * MB,
  fileBytes: 1 * MB,
  totalBytes: 50 * MB,
  files: 500,
  /** A lock not renewed for this long is free to take: its holder has crashed. */
  lockTtlMs: 120_000,
  /** The holder renews well inside the TTL, so a slow but live import keeps its lock. */
  lockRenewMs: 30_000,
} as const;

export interface ExportLimits {
  agents: number;
  tools: number;
  responseBytes: number;
}

export const EXPORT_LIMITS: ExportLimits = {
  agents: 1000,
  tools: 500,
  responseBytes: 100 * MB,
};

/** The paths of the two import routes (Express matches paths case-insensitively, so do we). */
const IMPORT_PATH = /^\/api\/projects\/[^/]+\/project-io\/import(?:\/preview)?\/?$/i;

export function isImportPath(path: string): boolean {
  return IMPORT_PATH.test(path);
}

/** `1048576` → `1 MB`, for messages. */
export function formatBytes(bytes: number): string {
  return bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`;
}

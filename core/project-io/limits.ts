// The spec's limits for project export and import (core-api.md "Limits"), in one place so the
// routes, their body limits and the docs agree.

const MB = 1024 * 1024;

export const IMPORT_LIMITS = {
  /** The import routes' own JSON body limit, read once an import slot is taken (the API's standard limit is 1 MB). */
  requestBodyBytes: 60 * MB,
  fileBytes: 1 * MB,
  totalBytes: 50 * MB,
  files: 500,
  /** Imports and import previews running at once in a tenant (one import per project). */
  importsPerTenant: 3,
  /** Objects and arrays in an import body: it needs two (the body and `files`). */
  requestBodyContainers: 1000,
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

/** `1048576` → `1 MB`, for messages. */
export function formatBytes(bytes: number): string {
  return bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`;
}

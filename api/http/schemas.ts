// Shared zod schemas for envelopes and common parameters.
import { z } from 'zod';
import '../openapi/registry';

export const ZErrorResponseSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().describe('Stable machine-readable code, e.g. VALIDATION_ERROR'),
      message: z.string().describe('What went wrong, for people'),
    }),
    retryAfterMs: z.number().optional().describe('On 429: milliseconds until a retry may succeed'),
  })
  .openapi('ErrorResponse');

export const ZProjectIdParam = z.object({
  projectId: z.string().min(1).max(64).describe('Project id (a CUID)'),
});

export const ZPaginationQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size (max 200)'),
  offset: z.coerce.number().int().min(0).default(0).describe('Items to skip'),
});

export const ZSuccessOnly = z.object({ success: z.literal(true) });

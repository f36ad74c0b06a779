// Request and response schemas of the data-lifecycle routes: retention, deletions, contact erasure.
import { z } from 'zod';
import '../openapi/registry';
import { RETENTION_MAX_DAYS } from '../../core/lifecycle/retention';

const ZDays = z
  .number()
  .int('must be a whole number of days')
  .min(1)
  .max(RETENTION_MAX_DAYS)
  .nullable()
  .optional()
  .describe(`Days this kind is kept (1-${RETENTION_MAX_DAYS}); null or omitted: kept until the project is deleted`);

export const ZPutRetentionRequest = z
  .object({
    transcripts: ZDays.describe('Transcript messages older than this many days are deleted; null or omitted: kept'),
    traces: ZDays.describe('Trace events older than this many days are deleted; null or omitted: kept'),
    analytics: ZDays.describe('Analytics events older than this many days are deleted (their hourly and minute rollups stay); null or omitted: kept'),
  })
  .strict();

const ZKindCounts = z.object({ transcripts: z.number().int(), traces: z.number().int(), analytics: z.number().int() });
const ZKindDates = z.object({ transcripts: z.string().nullable(), traces: z.string().nullable(), analytics: z.string().nullable() });

export const ZRetention = z
  .object({
    days: z.object({ transcripts: z.number().int().nullable(), traces: z.number().int().nullable(), analytics: z.number().int().nullable() }).describe('Days kept per kind; null: kept'),
    updatedAt: z.string().nullable().describe('When the setting last changed; null: never set'),
    lastRun: z
      .object({
        startedAt: z.string(),
        finishedAt: z.string(),
        cutoffs: ZKindDates.describe('What was older than these was deleted (null: that kind is kept)'),
        deleted: ZKindCounts.describe('Documents deleted by that run, per kind'),
      })
      .nullable()
      .describe('The last enforcement run for this project; null before the first'),
  })
  .openapi('Retention');

export const ZRetentionResponse = z.object({ success: z.literal(true), retention: ZRetention });

export const ZDeletion = z
  .object({
    id: z.string().describe('`del_` + a CUID'),
    target: z.enum(['project', 'tenant']),
    tenantId: z.string(),
    projectId: z.string().nullable(),
    status: z.enum(['running', 'completed']),
    workflowsEnded: z.number().int().describe('Running workflows of the project or tenant that were terminated'),
    deleted: z.record(z.string(), z.number().int()).describe('Documents deleted, by collection (GridFS buckets by bucket name); filled in when completed'),
    requestedAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .openapi('Deletion');

export const ZDeletionResponse = z.object({ success: z.literal(true), deletion: ZDeletion });

export const ZDeletionIdParam = z.object({ deletionId: z.string().min(1).max(64).describe('Deletion id (`del_…`)') });
export const ZTenantIdParam = z.object({ tenantId: z.string().min(1).max(64).describe('Tenant id') });

export const ZContactErasureResponse = z.object({
  success: z.literal(true),
  data: z
    .object({
      contactId: z.string(),
      erasedAt: z.string().describe('When the contact was first erased'),
      sessions: z.number().int().describe('Linked sessions whose data this request erased (0 when an earlier request did)'),
      sessionsEnded: z.number().int().describe('Of those, sessions still active, ended first'),
      transcriptMessagesRedacted: z.number().int(),
      traceEventsDeleted: z.number().int(),
      memoryFactsDeleted: z.number().int(),
      memoryStoresDeleted: z.number().int(),
      recordingsDeleted: z.number().int(),
    })
    .openapi('ContactErasure'),
});

// A project's recorded completion usage over a period, in total or by model (GET /chat/usage).
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { summarizeLlmUsage, type LlmUsageSummary } from '../../db/llm-usage';
import { findVisibleProject } from '../projects/visible';
import { type CoreContext } from '../context';

/** The period and grouping asked for (GET /chat/usage's query, api/completions/schemas.ts). */
export interface UsageQuery {
  projectId: string;
  /** ISO 8601, inclusive. */
  startDate?: string;
  /** ISO 8601; a date alone includes that whole day (UTC). */
  endDate?: string;
  groupBy?: 'model';
}

function parseRangeStart(value: string | undefined): Date | undefined {
  return value === undefined ? undefined : new Date(value.length === 10 ? `${value}T00:00:00.000Z` : value);
}

/** Exclusive upper bound: the next day for a date alone, the next millisecond for an instant. */
function parseRangeEnd(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  if (value.length === 10) return new Date(Date.parse(`${value}T00:00:00.000Z`) + 86_400_000);
  return new Date(Date.parse(value) + 1);
}

export async function projectUsage(ctx: CoreContext, principal: Principal, query: UsageQuery): Promise<Partial<LlmUsageSummary>> {
  const from = parseRangeStart(query.startDate);
  const to = parseRangeEnd(query.endDate);
  // An end before the start is an empty period (zero usage), not a malformed request: each date
  // is valid on its own, and the document cannot state a rule between two parameters.
  const project = await findVisibleProject(ctx, principal, query.projectId);
  if (!project) throw ApiError.notFound('Project');
  const result = await summarizeLlmUsage(ctx.models.LlmUsage, {
    tenantId: principal.tenantId,
    projectId: project._id,
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  });
  return query.groupBy === 'model' ? { summary: result.summary, byModel: result.byModel } : { summary: result.summary };
}

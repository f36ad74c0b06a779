// Voice analytics of a project: hourly buckets and a summary of its phone calls over the last
// `hours` (core/telephony/voice-analytics.ts), for a caller holding `session:read`. A key bound to
// environments sees only the calls of those environments. docs/voice-analytics.md.
import { defineRoute, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { voiceHourly, voiceSummary } from '../../core/telephony/voice-analytics';
import { ZVoiceAnalyticsQuery, ZVoiceHourlyResponse, ZVoiceSummaryResponse } from './schemas';

const TAGS = ['Voice analytics'];

export const voiceAnalyticsRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/voice-analytics/hourly',
    operationId: 'getVoiceAnalyticsHourly',
    summary: "The project's calls in hourly buckets over the last `hours`",
    description:
      'A call counts in the UTC hour it started, with all it did afterwards. Hours without a call are left out. MOS, jitter and the TTS ' +
      'quality estimate are always null: the TwiML path carries no audio measurements.',
    tags: TAGS,
    auth: 'session:read',
    params: ZProjectIdParam,
    query: ZVoiceAnalyticsQuery,
    errorStatuses: [400, 404],
    response: ZVoiceHourlyResponse,
    async handler({ ctx, principal, project, query }) {
      const data = await voiceHourly(ctx.models, { tenantId: principal.tenantId, projectId: project!._id, environments: principal.environments }, query.hours);
      return { success: true, data };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/voice-analytics/summary',
    operationId: 'getVoiceAnalyticsSummary',
    summary: "A summary of the project's calls over the last `hours`",
    description: 'The same figures as the hourly buckets, over the whole window. MOS figures are always null (see the hourly route).',
    tags: TAGS,
    auth: 'session:read',
    params: ZProjectIdParam,
    query: ZVoiceAnalyticsQuery,
    errorStatuses: [400, 404],
    response: ZVoiceSummaryResponse,
    async handler({ ctx, principal, project, query }) {
      const data = await voiceSummary(ctx.models, { tenantId: principal.tenantId, projectId: project!._id, environments: principal.environments }, query.hours);
      return { success: true, data };
    },
  }),
];

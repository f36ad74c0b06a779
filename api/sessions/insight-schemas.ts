// Request and response schemas of the session insight routes: analysis, generations and the
// CSV export (docs/sessions-api.md).
import { z } from 'zod';
import '../openapi/registry';
import { ZDateTime, ZLimitQuery, ZOffsetQuery } from '../http/schemas';
import { ZSessionId } from './schemas';

const ZFindingSchema = z
  .object({
    id: z.string().describe('`<rule>:<n>`, unique within the analysis'),
    rule: z.string().describe('The rule that fired (docs/sessions-api.md, "Analysis rules")'),
    category: z.enum(['slow_span', 'error_pattern', 'decision_anomaly', 'cost_hotspot']),
    severity: z.enum(['info', 'warning', 'critical']),
    spanIds: z.array(z.string()).describe('Spans the finding points at (at most 20); a turn is its root span `t<n>`'),
    spanCount: z.number().describe('All the spans behind the finding'),
    turns: z.array(z.number()),
    explanation: z.string().describe('What was observed and why it matters, for people'),
    threshold: z.number().describe("The rule's threshold, in `unit`"),
    observed: z.number().describe('The observed value, in `unit`'),
    unit: z.enum(['ms', 'count', 'tokens', 'ratio']),
    subject: z.record(z.string(), z.string()).describe('What the finding is about: tool, agent, model, guardrail, variable, …'),
  })
  .openapi('SessionFinding');

const ZSuggestionSchema = z
  .object({
    kind: z.string().describe('e.g. `cache_tool_result`, `shorten_prompt`, `raise_tool_timeout`'),
    subject: z.record(z.string(), z.string()),
    explanation: z.string(),
    findingIds: z.array(z.string()).describe('The findings the suggestion follows from'),
  })
  .openapi('SessionSuggestion');

export const ZAnalysisResponseSchema = z.object({
  success: z.literal(true),
  sessionId: z.string(),
  analysis: z
    .object({
      eventCount: z.number().describe('Trace events analysed'),
      truncated: z.boolean().describe('True when the session holds more events than the analysis reads (10,000)'),
      slowSpans: z.array(ZFindingSchema),
      errorPatterns: z.array(ZFindingSchema),
      decisionAnomalies: z.array(ZFindingSchema),
      costHotspots: z.array(ZFindingSchema),
      suggestions: z.array(ZSuggestionSchema),
      summary: z.object({ findings: z.number(), critical: z.number(), warning: z.number(), info: z.number() }),
    })
    .openapi('SessionAnalysis'),
});

const ZWindow = {
  from: ZDateTime.optional().describe('Trace events at or after this time'),
  to: ZDateTime.optional().describe('Trace events at or before this time'),
  sessionId: ZSessionId.optional().describe("Only this session's events (404 when it is not one of the project's)"),
};
const ZName = (what: string) => z.string().min(1).max(200).optional().describe(what);

export const ZGenerationsQuery = z.object({
  ...ZWindow,
  model: ZName('Only calls to this model (exact)'),
  agentName: ZName('Only calls made by this agent (exact)'),
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
});

export const ZGenerationSchema = z
  .object({
    id: z.string().describe('The trace event id, `<sessionId>:<seq>`'),
    sessionId: z.string(),
    spanId: z.string(),
    turn: z.number(),
    timestamp: z.string(),
    agentName: z.string().nullable().describe('Agent that made the call'),
    model: z.string().nullable(),
    provider: z.string().nullable(),
    purpose: z.string().nullable().describe('Why the runtime called the model: `response`, `extraction`, `classification`, …'),
    inputTokens: z.number(),
    outputTokens: z.number(),
    totalTokens: z.number(),
    latencyMs: z.number().nullable(),
    estimatedCost: z.number().nullable().describe('USD'),
    finishReason: z.string().nullable(),
    fallbackFrom: z.string().nullable().describe('The model the call fell back from'),
  })
  .openapi('SessionGeneration');

export const ZGenerationsResponseSchema = z.object({
  success: z.literal(true),
  total: z.number(),
  offset: z.number(),
  limit: z.number(),
  hasMore: z.boolean(),
  generations: z.array(ZGenerationSchema),
});

export const ZExportQuery = z.object({
  format: z.enum(['csv']).describe('Only `csv`'),
  ...ZWindow,
  agentName: ZName('Only sessions started with this agent (exact)'),
});

export const ZExportCsvBody = z.string().openapi({
  type: 'string',
  description: 'RFC 4180 CSV (UTF-8, CRLF): a header row, then one row per trace event',
  example:
    'session_id,session_agent,environment,channel,seq,turn,timestamp,type,span_id,parent_span_id,agent,model,tool,duration_ms,input_tokens,output_tokens,error,data\r\n' +
    '6f1c2a9e-0000-4000-8000-000000000001,Support_Agent,dev,api,1,1,2026-01-31T12:00:00.400Z,llm_call,t1.1,t1,Support_Agent,gpt-4o-mini,,420,245,38,,"{""model"":""gpt-4o-mini""}"\r\n',
});

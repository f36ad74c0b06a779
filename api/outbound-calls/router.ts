// Outbound call routes under /api/v1/project/{projectSlug}/{env}/outbound-calls (docs/telephony/outbound.md):
// initiate and terminate need `outbound_calls.initiate`, the rest `outbound_calls.read`. A call,
// connection or project the key cannot see is 404 CHANNEL_NOT_FOUND, never 403.
import { type Request } from 'express';
import { defineRoute, linksTo, RESPONSE_SENT, type AnyRoute } from '../http/route';
import {
  initiateOutboundCall,
  listOutboundCalls,
  lookupOutboundCall,
  OUTBOUND_INITIATE,
  OUTBOUND_READ,
  outboundScope,
  presentCall,
  searchOutboundCalls,
  summarizeOutboundCalls,
  terminateOutboundCall,
} from '../../core/telephony/outbound-calls';
import {
  ZCallResponse,
  ZEventStream,
  ZInitiateBody,
  ZInitiateResponse,
  ZListQuery,
  ZListResponse,
  ZOutboundCallParams,
  ZOutboundParams,
  ZSearchBody,
  ZSummaryQuery,
  ZSummaryResponse,
  ZTerminateResponse,
} from './schemas';
import { streamCallEvents } from './events';

const TAGS = ['Outbound calls'];
const BASE = '/api/v1/project/:projectSlug/:env/outbound-calls';
const ONE = `${BASE}/:outboundCallId`;
const SELF = { projectSlug: '$request.path.projectSlug', env: '$request.path.env', outboundCallId: '$request.path.outboundCallId' };
/** Literal sub-paths beside `/:outboundCallId`. */
const RESERVED = { outboundCallId: ['summary', 'search'] } as const;

export const outboundCallRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: BASE,
    operationId: 'initiateOutboundCall',
    summary: 'Place an outbound call: 201 as soon as it is accepted (the provider is not waited for)',
    description:
      'Scope `outbound_calls.initiate`. `idempotencyKey` is required: the same key with the same body returns the original call (200), with another body 409 `IDEMPOTENCY_CONFLICT`; any number of concurrent retries place one call. ' +
      'The answer does not wait for the provider: how the submit went shows on lookup as `initiationState` (`submitted`, `provider_request_unknown` while it is reconciled, `failed_to_submit` with `failureReason`). ' +
      '400 `INVALID_PHONE_NUMBER` (not E.164) or `SIP_INJECTION_REJECTED`; 404 `CHANNEL_NOT_FOUND` for a connection that is missing, another project\'s, of another environment or disabled; ' +
      '502 `OUTBOUND_WEBHOOK_NOT_CONFIGURED` when PUBLIC_BASE_URL cannot receive the provider\'s callbacks (production without https); 503 when the call could not be recorded (retry with the same key).',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundParams,
    body: ZInitiateBody,
    bodyExample: { channelConnectionId: 'cc_abc123', to: { type: 'phone', number: '+15551234567' }, idempotencyKey: 'order-1234-call-1', clientReferenceId: 'order-1234', amdMode: 'off' },
    // 201 for a new call (the handler sets it); 200 for a retry of the same key and body.
    successStatus: 200,
    alsoSuccess: [201],
    response: ZInitiateResponse,
    links: linksTo(['getOutboundCall', 'terminateOutboundCall', 'streamOutboundCallEvents'], {
      projectSlug: '$request.path.projectSlug',
      env: '$request.path.env',
      outboundCallId: '$response.body#/data/outboundCallId',
    }),
    errorStatuses: [400, 401, 403, 404, 409, 502, 503],
    async handler({ ctx, principal, params, body, res }) {
      const { status, data } = await initiateOutboundCall(ctx, principal, params, body);
      res.status(status);
      return { success: true, data };
    },
  }),
  defineRoute({
    method: 'get',
    path: BASE,
    operationId: 'listOutboundCalls',
    summary: 'List outbound calls, newest first, filtered (AND) and paged by cursor',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundParams,
    query: ZListQuery,
    response: ZListResponse,
    errorStatuses: [400, 401, 403, 404],
    async handler({ ctx, principal, params, query }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_READ);
      return { success: true, ...(await listOutboundCalls(ctx, scope, query)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/summary`,
    operationId: 'summarizeOutboundCalls',
    summary: 'Counts of outbound calls: total, answered, in flight, machine detected, by outcome',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundParams,
    query: ZSummaryQuery,
    response: ZSummaryResponse,
    errorStatuses: [400, 401, 403, 404],
    async handler({ ctx, principal, params, query }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_READ);
      return { success: true, data: await summarizeOutboundCalls(ctx, scope, query) };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/search`,
    operationId: 'searchOutboundCalls',
    summary: 'Search outbound calls, by the real destination (matched by blind index, never echoed) and the list filters',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundParams,
    body: ZSearchBody,
    bodyOptional: true,
    bodyExample: { destination: '+15551234567', outcome: 'completed', limit: 20 },
    response: ZListResponse,
    errorStatuses: [400, 401, 403, 404, 503],
    async handler({ ctx, principal, params, body }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_READ);
      return { success: true, ...(await searchOutboundCalls(ctx, scope, body)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operationId: 'getOutboundCall',
    summary: 'Look up one outbound call',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundCallParams,
    reservedParams: RESERVED,
    response: ZCallResponse,
    links: linksTo(['terminateOutboundCall', 'streamOutboundCallEvents'], SELF),
    errorStatuses: [401, 403, 404],
    async handler({ ctx, principal, params }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_READ);
      return { success: true, data: presentCall(await lookupOutboundCall(ctx, scope, params.outboundCallId)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/terminate`,
    operationId: 'terminateOutboundCall',
    summary: 'End a call: canceled before it connects, hung up after; a call already over answers its end',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundCallParams,
    reservedParams: RESERVED,
    response: ZTerminateResponse,
    links: linksTo(['getOutboundCall'], SELF),
    errorStatuses: [401, 403, 404, 503],
    async handler({ ctx, principal, params }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_INITIATE);
      return { success: true, data: await terminateOutboundCall(ctx, scope, params.outboundCallId) };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/events`,
    operationId: 'streamOutboundCallEvents',
    summary: "A call's phase transitions as Server-Sent Events, until it ends",
    description: 'Send `Last-Event-ID` (the last `version` seen) to resume: the `phase` events after it come first, none lost.',
    tags: TAGS,
    auth: 'authenticated',
    params: ZOutboundCallParams,
    reservedParams: RESERVED,
    response: ZEventStream,
    responseContentType: 'text/event-stream',
    errorStatuses: [400, 401, 403, 404],
    async handler({ ctx, principal, params, req, res }) {
      const scope = await outboundScope(ctx, principal, params.projectSlug, params.env, OUTBOUND_READ);
      await streamCallEvents(ctx, scope, params.outboundCallId, lastEventId(req), req, res);
      return RESPONSE_SENT;
    },
  }),
];

/** The `Last-Event-ID` header as a version, or null (absent or not a version). */
function lastEventId(req: Request): number | null {
  const raw = req.header('last-event-id');
  return raw && /^[0-9]{1,9}$/.test(raw.trim()) ? Number(raw.trim()) : null;
}

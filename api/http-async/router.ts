// The HTTP-async channel: its message route (POST /api/v1/channels/http-async/message) and its
// webhook subscriptions (/api/projects/:projectId/channels/http-async/subscriptions): reads need
// http_async:read, changes http_async:manage. docs/http-async.md.
import { type HttpAsyncDeliveryDoc, type HttpAsyncSubscriptionDoc } from '../../db/http-async-subscription';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZCreateSubscriptionRequest,
  ZHttpAsyncMessageAccepted,
  ZHttpAsyncMessageRequest,
  ZListDeliveriesResponse,
  ZListQuery,
  ZListSubscriptionsResponse,
  ZSubscriptionParams,
  ZSubscriptionResponse,
  ZSubscriptionWithSecretResponse,
  ZTestMessageResponse,
  ZUpdateSubscriptionRequest,
} from './schemas';
import {
  createSubscription,
  deleteSubscription,
  requireSubscription,
  rotateSubscriptionSecret,
  sendTestMessage,
  setSubscriptionStatus,
  updateSubscription,
} from '../../core/http-async/subscriptions';
import { consumeRateLimit } from '../middleware/rate-limit';
import { acceptHttpAsyncMessage } from '../../core/http-async/messages';
import { readIdempotencyKey } from '../http/idempotency-key';

const TAGS = ['HTTP-async channel'];
const BASE = '/api/projects/:projectId/channels/http-async/subscriptions';
const ONE = `${BASE}/:subscriptionId`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

function present(doc: HttpAsyncSubscriptionDoc) {
  return {
    id: doc._id,
    sourceId: doc._id,
    sourceType: 'webhook_subscription' as const,
    name: doc.name,
    callbackUrl: doc.callbackUrl,
    events: doc.events,
    environment: doc.environment,
    status: doc.status,
    secretVersion: doc.secretVersion,
    secretRotatedAt: iso(doc.secretRotatedAt),
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

function presentDelivery(doc: HttpAsyncDeliveryDoc) {
  return {
    id: doc._id,
    messageId: doc.messageId,
    event: doc.event,
    test: doc.test,
    status: doc.status,
    attempts: doc.attempts,
    statusCode: doc.statusCode,
    latencyMs: doc.latencyMs,
    lastError: doc.lastError,
    lastAttemptAt: iso(doc.lastAttemptAt),
    createdAt: doc.createdAt.toISOString(),
  };
}

const SELF = { projectId: '$request.path.projectId', subscriptionId: '$request.path.subscriptionId' };
const ALL_ON_ONE = ['getHttpAsyncSubscription', 'updateHttpAsyncSubscription', 'deleteHttpAsyncSubscription', 'pauseHttpAsyncSubscription', 'resumeHttpAsyncSubscription', 'rotateHttpAsyncSubscriptionSecret', 'testHttpAsyncSubscription', 'listHttpAsyncDeliveries'];
const statusRoute = (status: 'active' | 'paused') =>
  defineRoute({
    method: 'post',
    path: `${ONE}/${status === 'paused' ? 'pause' : 'resume'}`,
    operationId: status === 'paused' ? 'pauseHttpAsyncSubscription' : 'resumeHttpAsyncSubscription',
    summary: status === 'paused' ? 'Pause a subscription: nothing is delivered to it until it is resumed' : 'Resume a paused subscription',
    description: 'Idempotent: pausing a paused subscription (or resuming an active one) answers it unchanged.',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZSubscriptionParams,
    response: ZSubscriptionResponse,
    links: linksTo([status === 'paused' ? 'resumeHttpAsyncSubscription' : 'pauseHttpAsyncSubscription', 'getHttpAsyncSubscription'], SELF),
    errorStatuses: [404],
    async handler({ ctx, principal, project, params }) {
      return { success: true, subscription: present(await setSubscriptionStatus(ctx, principal, project!, params.subscriptionId, status)) };
    },
  });

export const httpAsyncRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/channels/http-async/message',
    operationId: 'sendHttpAsyncMessage',
    summary: 'Send a message of the HTTP-async channel: 202 once it is queued; the reply is POSTed to the subscription',
    description:
      'Needs the HTTP-async submission scope (`http_async.execute`). The answer confirms durable queuing only: the reply arrives at the subscription\'s callback URL as an `agent.response` with the same `message_id`, signed with `X-ABL-Signature` (docs/http-async.md). ' +
      'Send `Idempotency-Key` to make a retried request count once: the same key in the same conversation gives the same `message_id`, and the message is answered once (a retried first message may send your own key again). ' +
      'Messages of one `session_key` are answered one at a time in the order accepted. The first message sends your own key; every follow-up sends the canonical `session_key` returned here (your own key again is 400 `SESSION_KEY_NOT_CANONICAL`). ' +
      '404 for a project or subscription the key cannot see; 409 `SUBSCRIPTION_PAUSED`; 429 when one conversation is sent faster than SESSION_MESSAGES_PER_MINUTE or the tenant over its rate limit; 503 when the message could not be queued (retry with backoff).',
    tags: TAGS,
    auth: 'session:execute',
    body: ZHttpAsyncMessageRequest,
    bodyExample: { project_id: 'proj_123', subscription_id: 'whs-abc123', message: 'Where is my order?', session_key: 'customer-42', metadata: { ticket: 'T-1001' } },
    successStatus: 202,
    response: ZHttpAsyncMessageAccepted,
    errorStatuses: [400, 403, 404, 409, 429, 503],
    async handler({ ctx, principal, body, req, res }) {
      const chargeMessage = (limiterKey: string) => consumeRateLimit(ctx.sessionMessageLimiter, limiterKey, res, 'Conversation message rate limit exceeded');
      return acceptHttpAsyncMessage(ctx, principal, body, chargeMessage, readIdempotencyKey(req));
    },
  }),
  defineRoute({
    method: 'post',
    path: BASE,
    operationId: 'createHttpAsyncSubscription',
    summary: 'Create a webhook subscription of the HTTP-async channel (the signing secret is shown once)',
    description:
      'The answer carries the Source ID (`subscription.id`, what callers send as `subscription_id`) and the signing secret, which is never shown again. ' +
      '422 when the callback URL is not https in production, resolves to a private, loopback or link-local address, or does not resolve; ' +
      '503 when encryption is not configured. The same URL and environment may be subscribed more than once: each subscription has its own Source ID and secret.',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZProjectIdParam,
    body: ZCreateSubscriptionRequest,
    bodyExample: { name: 'Support front end', callbackUrl: 'https://hooks.example.com/abl', events: ['agent.response', 'agent.status'], environment: 'production' },
    successStatus: 201,
    response: ZSubscriptionWithSecretResponse,
    links: linksTo(ALL_ON_ONE, { projectId: '$request.path.projectId', subscriptionId: '$response.body#/subscription/id' }),
    errorStatuses: [404, 422, 503],
    async handler({ ctx, principal, project, body }) {
      const { doc, secret } = await createSubscription(ctx, principal, project!, body);
      return { success: true, subscription: present(doc), signingSecret: secret };
    },
  }),
  defineRoute({
    method: 'get',
    path: BASE,
    operationId: 'listHttpAsyncSubscriptions',
    summary: "A project's HTTP-async webhook subscriptions, newest first (never the secrets)",
    tags: TAGS,
    auth: 'http_async:read',
    params: ZProjectIdParam,
    query: ZListQuery,
    response: ZListSubscriptionsResponse,
    async handler({ ctx, principal, project, query }) {
      const filter = {
        tenantId: project!.tenantId,
        projectId: project!._id,
        // An environment-bound key lists only its environments' subscriptions.
        ...(principal.environments?.length ? { environment: { $in: [...principal.environments] } } : {}),
      };
      const [docs, total] = await Promise.all([
        ctx.models.HttpAsyncSubscription.find(filter, { secret: 0 }).sort({ createdAt: -1, _id: -1 }).skip(query.offset).limit(query.limit).lean(),
        ctx.models.HttpAsyncSubscription.countDocuments(filter),
      ]);
      return { success: true, subscriptions: docs.map(present), total, offset: query.offset, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operationId: 'getHttpAsyncSubscription',
    summary: 'One HTTP-async webhook subscription (never its secret)',
    tags: TAGS,
    auth: 'http_async:read',
    params: ZSubscriptionParams,
    response: ZSubscriptionResponse,
    links: linksTo(['listHttpAsyncDeliveries'], SELF),
    errorStatuses: [404],
    async handler({ ctx, principal, project, params }) {
      return { success: true, subscription: present(await requireSubscription(ctx, principal, project!, params.subscriptionId)) };
    },
  }),
  defineRoute({
    method: 'patch',
    path: ONE,
    operationId: 'updateHttpAsyncSubscription',
    summary: "Change a subscription's display name, callback URL or events",
    description: 'A new callback URL is checked as on create (422). The secret, environment and status do not change here.',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZSubscriptionParams,
    body: ZUpdateSubscriptionRequest,
    bodyExample: { callbackUrl: 'https://hooks.example.com/abl/v2', events: ['agent.response'] },
    response: ZSubscriptionResponse,
    links: linksTo(['getHttpAsyncSubscription'], SELF),
    errorStatuses: [404, 422],
    async handler({ ctx, principal, project, params, body }) {
      return { success: true, subscription: present(await updateSubscription(ctx, principal, project!, params.subscriptionId, body)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: ONE,
    operationId: 'deleteHttpAsyncSubscription',
    summary: 'Delete a subscription, its recent deliveries and its conversations; its Source ID is refused from then on',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZSubscriptionParams,
    response: ZSuccessOnly,
    errorStatuses: [404],
    async handler({ ctx, principal, project, params }) {
      await deleteSubscription(ctx, principal, project!, params.subscriptionId);
      return { success: true };
    },
  }),
  statusRoute('paused'),
  statusRoute('active'),
  defineRoute({
    method: 'post',
    path: `${ONE}/rotate-secret`,
    operationId: 'rotateHttpAsyncSubscriptionSecret',
    summary: 'Replace the signing secret; the new one is shown once and signs every callback from now on',
    description: 'The old secret stops signing at once (there is no grace period): a receiver should accept either secret while it switches. 503 when encryption is not configured.',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZSubscriptionParams,
    response: ZSubscriptionWithSecretResponse,
    links: linksTo(['testHttpAsyncSubscription'], SELF),
    errorStatuses: [404, 503],
    async handler({ ctx, principal, project, params }) {
      const { doc, secret } = await rotateSubscriptionSecret(ctx, principal, project!, params.subscriptionId);
      return { success: true, subscription: present(doc), signingSecret: secret };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/test`,
    operationId: 'testHttpAsyncSubscription',
    summary: 'Send a signed test callback to the subscription and report what the receiver answered',
    description:
      'A POST with the body of an `agent.response` callback (`metadata.test: true`), signed like every callback, with a 10 s timeout; sent even when the subscription is paused. ' +
      'The receiver not answering 2xx is still a 200 here, with `delivered: false` and the reason. The attempt is recorded in recent deliveries.',
    tags: TAGS,
    auth: 'http_async:manage',
    params: ZSubscriptionParams,
    response: ZTestMessageResponse,
    links: linksTo(['listHttpAsyncDeliveries'], SELF),
    errorStatuses: [404, 503],
    async handler({ ctx, principal, project, params }) {
      const outcome = await sendTestMessage(ctx, principal, project!, params.subscriptionId);
      return {
        success: true,
        result: { messageId: outcome.messageId, delivered: outcome.ok, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs, error: outcome.error },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/deliveries`,
    operationId: 'listHttpAsyncDeliveries',
    summary: "A subscription's recent deliveries, newest first: status code, attempts, latency, last error",
    tags: TAGS,
    auth: 'http_async:read',
    params: ZSubscriptionParams,
    query: ZListQuery,
    response: ZListDeliveriesResponse,
    errorStatuses: [404],
    async handler({ ctx, principal, project, params, query }) {
      const sub = await requireSubscription(ctx, principal, project!, params.subscriptionId);
      const filter = { tenantId: sub.tenantId, projectId: sub.projectId, subscriptionId: sub._id };
      const [docs, total] = await Promise.all([
        ctx.models.HttpAsyncDelivery.find(filter).sort({ createdAt: -1, _id: -1 }).skip(query.offset).limit(query.limit).lean(),
        ctx.models.HttpAsyncDelivery.countDocuments(filter),
      ]);
      return { success: true, deliveries: docs.map(presentDelivery), total, offset: query.offset, limit: query.limit };
    },
  }),
];

// Zod schemas of the HTTP-async subscription routes (docs/http-async.md).
import { z } from 'zod';
import '../openapi/registry';
import { DELIVERY_STATUSES, HTTP_ASYNC_EVENTS, SUBSCRIPTION_STATUSES } from '../../db/http-async-subscription';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';
import { NOT_BLANK_PATTERN, trimmedText, ZLimitQuery, ZOffsetQuery, ZProjectIdParam } from '../http/schemas';
import { ZRunMetadata } from '../agentic-apps/schemas';

export const SUBSCRIPTION_NAME_MAX = 200;
export const CALLBACK_URL_MAX = 2048;

const ZName = trimmedText(SUBSCRIPTION_NAME_MAX).describe('Display name');
const ZCallbackUrl = z
  .string()
  .min(1)
  .max(CALLBACK_URL_MAX)
  // Spelled without \s, whose meaning differs between regular-expression dialects: the control
  // characters and the space are what a URL may not contain unencoded.
  // eslint-disable-next-line no-control-regex
  .regex(/^[hH][tT][tT][pP][sS]?:\/\/[^\x00-\x20\x7f/?#@]+(?:[/?#][^\x00-\x20\x7f]*)?$/, 'must be an http:// or https:// URL without a user name or password')
  .describe('Where callbacks are POSTed. HTTPS only when the platform runs in production; private, loopback and link-local destinations are refused');
const ZEvent = z.enum(HTTP_ASYNC_EVENTS);
const ZEvents = z.array(ZEvent).min(1).max(HTTP_ASYNC_EVENTS.length).describe('Events delivered to this subscription; repeats count once');

export const ZCreateSubscriptionRequest = z
  .object({
    name: ZName,
    callbackUrl: ZCallbackUrl,
    events: ZEvents.default(['agent.response']),
    environment: z.enum(KEY_ENVIRONMENTS).default('dev').describe('The environment whose conversations the subscription receives'),
  })
  .strict()
  .openapi('CreateHttpAsyncSubscriptionRequest');

export const ZUpdateSubscriptionRequest = z
  .object({ name: ZName.optional(), callbackUrl: ZCallbackUrl.optional(), events: ZEvents.optional() })
  .strict()
  .openapi('UpdateHttpAsyncSubscriptionRequest', { description: 'Only the fields given change; environment and status do not change here' });

export const ZSubscriptionParams = ZProjectIdParam.extend({
  subscriptionId: z.string().min(1).max(64).describe('Subscription id (its Source ID, `whs-…`)'),
});

export const ZListQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });

export const ZSubscription = z
  .object({
    id: z.string().describe('The Source ID (`whs-…`): what callers send as `subscription_id`'),
    sourceId: z.string().describe('Same as `id`'),
    sourceType: z.literal('webhook_subscription'),
    name: z.string(),
    callbackUrl: z.string(),
    events: z.array(ZEvent),
    environment: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    secretVersion: z.number().int().min(1).describe('1 at creation, + 1 per rotation'),
    secretRotatedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('HttpAsyncSubscription');

const SECRET_DESCRIPTION = 'The signing secret (`whsec_…`), shown only in this answer: store it now. Callbacks carry X-ABL-Signature computed with it';

export const ZSubscriptionResponse = z.object({ success: z.literal(true), subscription: ZSubscription });

export const ZSubscriptionWithSecretResponse = z.object({
  success: z.literal(true),
  subscription: ZSubscription,
  signingSecret: z.string().describe(SECRET_DESCRIPTION),
});

export const ZListSubscriptionsResponse = z.object({
  success: z.literal(true),
  subscriptions: z.array(ZSubscription),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
  limit: z.number().int().min(1),
});

export const ZDelivery = z
  .object({
    id: z.string(),
    messageId: z.string().describe('The `message_id` of the callback; the same on every attempt'),
    event: ZEvent,
    test: z.boolean().describe('A test message sent through the API'),
    status: z.enum(DELIVERY_STATUSES).describe('`pending` while retries remain, `delivered` after a 2xx, `failed` when retries are spent'),
    attempts: z.number().int().min(0),
    statusCode: z.number().int().nullable().describe("The receiver's status on the last attempt; null when none came"),
    latencyMs: z.number().int().min(0).nullable().describe('Of the last attempt'),
    lastError: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('HttpAsyncDelivery');

export const ZListDeliveriesResponse = z.object({
  success: z.literal(true),
  deliveries: z.array(ZDelivery),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
  limit: z.number().int().min(1),
});

export const ZTestMessageResponse = z.object({
  success: z.literal(true),
  result: z
    .object({
      messageId: z.string(),
      delivered: z.boolean().describe('The receiver answered 2xx'),
      statusCode: z.number().int().nullable(),
      latencyMs: z.number().int().min(0),
      error: z.string().nullable().describe('Why it was not delivered: the status, a timeout (10 s), a refused destination or a network error'),
    })
    .openapi('HttpAsyncTestResult'),
});

// ------------------------------------------------------------------ POST /api/v1/channels/http-async/message

/** Longest message text, the same as an agentic-app run's input item. */
export const HTTP_ASYNC_MESSAGE_MAX_CHARS = 16_000;
/** Longest session key as sent; a caller's own key is what is left after the canonical prefix. */
export const SESSION_KEY_MAX = 512;

export const ZHttpAsyncMessageRequest = z
  .object({
    project_id: z.string().min(1).max(64).describe('The owning project'),
    subscription_id: z.string().min(1).max(64).describe("The webhook subscription's Source ID (`whs-…`)"),
    message: z.string().min(1).max(HTTP_ASYNC_MESSAGE_MAX_CHARS).regex(NOT_BLANK_PATTERN, 'must not be blank').describe('What the user said'),
    session_key: z
      .string()
      .min(1)
      .max(SESSION_KEY_MAX)
      // eslint-disable-next-line no-control-regex
      .regex(/^[^\x00-\x1f\x7f]+$/, 'must not contain control characters')
      .describe("Your own key on the first message; on every follow-up the canonical key (`http_async:…`) the first acknowledgement returned"),
    metadata: ZRunMetadata.optional().describe('Returned unchanged in the callback; max 16 KB of JSON, 50 keys, depth 5'),
  })
  .strict()
  .openapi('HttpAsyncMessageRequest');
export type THttpAsyncMessageRequest = z.infer<typeof ZHttpAsyncMessageRequest>;

export const ZHttpAsyncMessageAccepted = z
  .object({
    message_id: z.string().describe('The accepted message; the `agent.response` delivery that answers it carries the same id'),
    session_key: z.string().describe('The canonical key, `http_async:<project>:<subscription>:<your key>`: store it and send it unchanged'),
    status: z.literal('accepted'),
    _note: z.string(),
  })
  .openapi('HttpAsyncMessageAccepted');

// HTTP-async webhook subscriptions (docs/http-async.md): where a project's replies are POSTed,
// for which events and environment, and the signing secret sealed with the tenant's data key
// (db/tenant-data-key.ts) under additional data naming the subscription, so it opens nowhere else.
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';

export const HTTP_ASYNC_EVENTS = ['agent.response', 'agent.status', 'agent.media'] as const;
export type HttpAsyncEvent = (typeof HTTP_ASYNC_EVENTS)[number];

export const SUBSCRIPTION_STATUSES = ['active', 'paused'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** The Source ID prefix: callers send the id as `subscription_id`. */
export const SUBSCRIPTION_ID_PREFIX = 'whs-';
export const newSubscriptionId = (): string => SUBSCRIPTION_ID_PREFIX + createId();

export interface HttpAsyncSubscriptionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  name: string;
  callbackUrl: string;
  events: HttpAsyncEvent[];
  environment: string;
  status: SubscriptionStatus;
  /** The signing secret, sealed; shown in clear only by create and rotate. */
  secret: Sealed;
  /** 1 at creation, + 1 per rotation. */
  secretVersion: number;
  /**
   * 1 at creation, + 1 with every change (URL, events, status, secret): a worker that read this
   * revision knows what it read is current (activities/http-async/delivery.ts). Absent on
   * subscriptions stored before it, which are read on every delivery attempt.
   */
  revision?: number;
  secretRotatedAt: Date | null;
  createdBy: { type: string; id: string };
  createdAt: Date;
  updatedAt: Date;
}

const ActorSchema = new Schema({ type: { type: String, required: true }, id: { type: String, required: true } }, { _id: false });

const HttpAsyncSubscriptionSchema = new Schema<HttpAsyncSubscriptionDoc>(
  {
    _id: { type: String, default: newSubscriptionId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    callbackUrl: { type: String, required: true },
    events: { type: [String], required: true, enum: HTTP_ASYNC_EVENTS },
    environment: { type: String, required: true },
    status: { type: String, required: true, enum: SUBSCRIPTION_STATUSES, default: 'active' },
    secret: { type: SealedSchema, required: true },
    secretVersion: { type: Number, required: true, default: 1 },
    revision: { type: Number, default: 1 },
    secretRotatedAt: { type: Date, default: null },
    createdBy: { type: ActorSchema, required: true },
  },
  { timestamps: true, versionKey: false },
);
HttpAsyncSubscriptionSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

export type HttpAsyncSubscriptionModel = Model<HttpAsyncSubscriptionDoc>;
export const httpAsyncSubscriptionModel = (c: Connection): HttpAsyncSubscriptionModel =>
  c.model<HttpAsyncSubscriptionDoc>('HttpAsyncSubscription', HttpAsyncSubscriptionSchema, 'http_async_subscriptions');

export interface SubscriptionPlace {
  _id: string;
  tenantId: string;
  projectId: string;
}

/** Additional data binding a sealed signing secret to its subscription. */
export function subscriptionSecretAad(place: SubscriptionPlace): string {
  return JSON.stringify(['switchboard/http-async-secret/v1', place.tenantId, place.projectId, place._id]);
}

export async function sealSubscriptionSecret(keys: TenantDataKeyModel, ring: KeyRing, place: SubscriptionPlace, secret: string): Promise<Sealed> {
  const dataKey = await tenantDataKey(keys, ring, place.tenantId);
  return seal(dataKey, subscriptionSecretAad(place), Buffer.from(secret, 'utf8'));
}

/**
 * The signing secret in clear, for signing a callback (test message, delivery activity).
 * @throws when the ring lacks the master key or the sealed value was moved or altered.
 */
export async function openSubscriptionSecret(keys: TenantDataKeyModel, ring: KeyRing, doc: SubscriptionPlace & { secret: Sealed }): Promise<string> {
  const dataKey = await tenantDataKey(keys, ring, doc.tenantId);
  return unseal(dataKey, subscriptionSecretAad(doc), doc.secret).toString('utf8');
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One logical delivery of one message to one subscription, updated on every attempt (the same
 * `messageId` throughout): what a subscription's recent-deliveries list shows.
 */
export interface HttpAsyncDeliveryDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  subscriptionId: string;
  messageId: string;
  event: HttpAsyncEvent;
  /** A test message sent through the management API, not a reply. */
  test: boolean;
  status: DeliveryStatus;
  attempts: number;
  /** The receiver's status on the last attempt, null when none came. */
  statusCode: number | null;
  /** Of the last attempt. */
  latencyMs: number | null;
  /** Why the last attempt failed; null after a success. */
  lastError: string | null;
  lastAttemptAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const newDeliveryId = () => 'whd-' + createId();

const HttpAsyncDeliverySchema = new Schema<HttpAsyncDeliveryDoc>(
  {
    _id: { type: String, default: newDeliveryId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    subscriptionId: { type: String, required: true },
    messageId: { type: String, required: true },
    event: { type: String, required: true, enum: HTTP_ASYNC_EVENTS },
    test: { type: Boolean, required: true, default: false },
    status: { type: String, required: true, enum: DELIVERY_STATUSES, default: 'pending' },
    attempts: { type: Number, required: true, default: 0 },
    statusCode: { type: Number, default: null },
    latencyMs: { type: Number, default: null },
    lastError: { type: String, default: null },
    lastAttemptAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false },
);
// One record per message and subscription, so attempts update it (an upsert cannot duplicate it).
HttpAsyncDeliverySchema.index({ tenantId: 1, subscriptionId: 1, messageId: 1 }, { unique: true });
HttpAsyncDeliverySchema.index({ tenantId: 1, projectId: 1, subscriptionId: 1, createdAt: -1 });

export type HttpAsyncDeliveryModel = Model<HttpAsyncDeliveryDoc>;
export const httpAsyncDeliveryModel = (c: Connection): HttpAsyncDeliveryModel =>
  c.model<HttpAsyncDeliveryDoc>('HttpAsyncDelivery', HttpAsyncDeliverySchema, 'http_async_deliveries');

export interface DeliveryAttempt {
  tenantId: string;
  projectId: string;
  subscriptionId: string;
  messageId: string;
  event: HttpAsyncEvent;
  test?: boolean;
  /** `pending` while retries remain after a failed attempt; `failed` once they are spent. */
  status: DeliveryStatus;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  at?: Date;
}

/**
 * Inserts a delivery's record at its first attempt, straight through the driver: every field is
 * set here (what the schema's defaults and timestamps would add), so no document is built and
 * validated for the one write most deliveries make. A second record for the same message and
 * subscription is refused by the unique index (a duplicate-key error).
 */
export async function insertFirstDeliveryAttempt(model: HttpAsyncDeliveryModel, attempt: DeliveryAttempt): Promise<void> {
  const now = new Date();
  const doc: HttpAsyncDeliveryDoc = {
    _id: newDeliveryId(),
    tenantId: attempt.tenantId,
    projectId: attempt.projectId,
    subscriptionId: attempt.subscriptionId,
    messageId: attempt.messageId,
    event: attempt.event,
    test: attempt.test ?? false,
    status: attempt.status,
    attempts: 1,
    statusCode: attempt.statusCode,
    latencyMs: attempt.latencyMs,
    lastError: attempt.error,
    lastAttemptAt: attempt.at ?? now,
    createdAt: now,
    updatedAt: now,
  };
  await model.collection.insertOne(doc as unknown as Parameters<typeof model.collection.insertOne>[0]);
}

/** Records one attempt: creates the delivery on the first, counts and overwrites on later ones. */
export async function recordDeliveryAttempt(model: HttpAsyncDeliveryModel, attempt: DeliveryAttempt): Promise<HttpAsyncDeliveryDoc> {
  const { tenantId, projectId, subscriptionId, messageId, event } = attempt;
  const doc = await model.findOneAndUpdate(
    { tenantId, subscriptionId, messageId },
    {
      $setOnInsert: { projectId, event, test: attempt.test ?? false },
      $set: { status: attempt.status, statusCode: attempt.statusCode, latencyMs: attempt.latencyMs, lastError: attempt.error, lastAttemptAt: attempt.at ?? new Date() },
      $inc: { attempts: 1 },
    },
    { upsert: true, new: true, lean: true },
  );
  // An upsert with `new` always answers the document.
  return doc as HttpAsyncDeliveryDoc;
}

/**
 * A delivery a paused subscription held until its window ended: failed, its attempts and the last
 * one's status left as they were (nothing was posted this time; it may never have been tried).
 */
export async function failHeldDelivery(
  model: HttpAsyncDeliveryModel,
  held: Pick<DeliveryAttempt, 'tenantId' | 'projectId' | 'subscriptionId' | 'messageId' | 'event' | 'error'>,
): Promise<void> {
  const { tenantId, projectId, subscriptionId, messageId, event } = held;
  await model.updateOne(
    { tenantId, subscriptionId, messageId },
    { $setOnInsert: { projectId, event, test: false }, $set: { status: 'failed', lastError: held.error } },
    { upsert: true },
  );
}

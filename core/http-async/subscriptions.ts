// HTTP-async webhook subscriptions of a project: create (the signing secret sealed, shown once),
// change, pause, resume, rotate, delete, and the signed test message. Every read carries the
// tenant and the project; a subscription outside them, or outside a bound key's environments, is 404.
import { createId } from '@paralleldrive/cuid2';
import { DomainError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { destinationGuard, httpAsyncDestinationPolicy } from '../../lib/net/destination';
import { checkCallbackUrlRules } from '../../lib/net/callback-url';
import { newSigningSecret } from '../../lib/http-async/signing';
import { postSignedCallback, type CallbackPostOutcome } from '../../lib/http-async/callback-post';
import { type ProjectDoc } from '../../db/project';
import {
  newSubscriptionId,
  openSubscriptionSecret,
  recordDeliveryAttempt,
  sealSubscriptionSecret,
  type HttpAsyncEvent,
  type HttpAsyncSubscriptionDoc,
  type SubscriptionStatus,
} from '../../db/http-async-subscription';
import { type CoreContext } from '../context';
import { requireEnvironment } from '../platform-keys/environments';
import { requireMasterKeys } from '../tool-secrets/secrets';

const policyOf = (ctx: CoreContext) => httpAsyncDestinationPolicy(ctx.config);

/** Repeats count once; the order is the vocabulary's. */
function normalizeEvents(events: readonly HttpAsyncEvent[]): HttpAsyncEvent[] {
  return (['agent.response', 'agent.status', 'agent.media'] as const).filter((e) => events.includes(e));
}

/**
 * The callback URL as stored, after the rules a schema cannot state (422, since the input was
 * schema-valid): a URL the parser takes, https in production, a public destination by resolution.
 */
export async function checkCallbackUrl(ctx: CoreContext, raw: string): Promise<string> {
  const checked = await checkCallbackUrlRules(raw, { production: ctx.config.NODE_ENV === 'production', policy: policyOf(ctx) });
  if (!checked.ok) throw new DomainError('UNPROCESSABLE_ENTITY', checked.message);
  return checked.url;
}

/** The subscription if it is in this project (of this tenant) and the key's environments, else 404. */
export async function requireSubscription(ctx: CoreContext, principal: Principal, project: ProjectDoc, id: string): Promise<HttpAsyncSubscriptionDoc> {
  const doc = await ctx.models.HttpAsyncSubscription.findOne({ _id: id, tenantId: project.tenantId, projectId: project._id }).lean();
  if (!doc || !canActInEnvironment(principal, doc.environment)) throw DomainError.notFound('Subscription');
  return doc;
}

export interface CreateSubscriptionInput {
  name: string;
  callbackUrl: string;
  events: HttpAsyncEvent[];
  environment: string;
}

export async function createSubscription(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  input: CreateSubscriptionInput,
): Promise<{ doc: HttpAsyncSubscriptionDoc; secret: string }> {
  requireEnvironment(principal, input.environment);
  const ring = requireMasterKeys(ctx);
  const callbackUrl = await checkCallbackUrl(ctx, input.callbackUrl);
  const place = { _id: newSubscriptionId(), tenantId: project.tenantId, projectId: project._id };
  const secret = newSigningSecret();
  const sealed = await sealSubscriptionSecret(ctx.models.TenantDataKey, ring, place, secret);
  const created = await ctx.models.HttpAsyncSubscription.create({
    ...place,
    name: input.name,
    callbackUrl,
    events: normalizeEvents(input.events),
    environment: input.environment,
    status: 'active',
    secret: sealed,
    secretVersion: 1,
    createdBy: { type: principal.kind, id: principal.subjectId },
  });
  return { doc: created.toObject(), secret };
}

/** Every change counts in the subscription's revision (what a delivery checks its copy against). */
async function updateWhere(ctx: CoreContext, current: HttpAsyncSubscriptionDoc, update: { $set: Record<string, unknown>; $inc?: Record<string, number> }): Promise<HttpAsyncSubscriptionDoc> {
  const doc = await ctx.models.HttpAsyncSubscription.findOneAndUpdate(
    { _id: current._id, tenantId: current.tenantId, projectId: current.projectId },
    { ...update, $inc: { ...update.$inc, revision: 1 } },
    { new: true, lean: true },
  );
  // Deleted between the read and the update.
  if (!doc) throw DomainError.notFound('Subscription');
  return doc;
}

export async function updateSubscription(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  id: string,
  input: { name?: string; callbackUrl?: string; events?: HttpAsyncEvent[] },
): Promise<HttpAsyncSubscriptionDoc> {
  const current = await requireSubscription(ctx, principal, project, id);
  const set: Record<string, unknown> = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.callbackUrl !== undefined) set.callbackUrl = await checkCallbackUrl(ctx, input.callbackUrl);
  if (input.events !== undefined) set.events = normalizeEvents(input.events);
  if (Object.keys(set).length === 0) return current;
  return updateWhere(ctx, current, { $set: set });
}

export async function setSubscriptionStatus(ctx: CoreContext, principal: Principal, project: ProjectDoc, id: string, status: SubscriptionStatus): Promise<HttpAsyncSubscriptionDoc> {
  const current = await requireSubscription(ctx, principal, project, id);
  // Pausing a paused subscription (or resuming an active one) changes nothing and is not an error.
  if (current.status === status) return current;
  return updateWhere(ctx, current, { $set: { status } });
}

/** A new secret, effective at once: the old one signs nothing more (no grace period). */
export async function rotateSubscriptionSecret(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  id: string,
): Promise<{ doc: HttpAsyncSubscriptionDoc; secret: string }> {
  const ring = requireMasterKeys(ctx);
  const current = await requireSubscription(ctx, principal, project, id);
  const secret = newSigningSecret();
  const sealed = await sealSubscriptionSecret(ctx.models.TenantDataKey, ring, current, secret);
  const doc = await updateWhere(ctx, current, { $set: { secret: sealed, secretRotatedAt: new Date() }, $inc: { secretVersion: 1 } });
  return { doc, secret };
}

export async function deleteSubscription(ctx: CoreContext, principal: Principal, project: ProjectDoc, id: string): Promise<void> {
  const current = await requireSubscription(ctx, principal, project, id);
  const removed = await ctx.models.HttpAsyncSubscription.deleteOne({ _id: current._id, tenantId: current.tenantId, projectId: current.projectId });
  if (removed.deletedCount === 0) throw DomainError.notFound('Subscription');
  await ctx.models.HttpAsyncDelivery.deleteMany({ tenantId: current.tenantId, subscriptionId: current._id });
  // Its conversations' keys go too; a running conversation drops what it still had to deliver.
  await ctx.models.HttpAsyncConversation.deleteMany({ tenantId: current.tenantId, projectId: current.projectId, subscriptionId: current._id });
}

export const newMessageId = (): string => 'ham-' + createId();

export const TEST_MESSAGE_TEXT = 'This is a test message from Switchboard.';

/** A callback with the body of an `agent.response` delivery, marked as a test in `metadata`. */
export function testCallbackBody(sub: HttpAsyncSubscriptionDoc, messageId: string) {
  return {
    message_id: messageId,
    session_key: `http_async:${sub.projectId}:${sub._id}:test`,
    response: TEST_MESSAGE_TEXT,
    channel_output: { kind: 'text', text: TEST_MESSAGE_TEXT },
    outcome: { status: 'ok', usedFallback: false },
    trace_context: { session_id: '', delivery: 'correlation_only' },
    session_id: '',
    is_new_session: false,
    response_metadata: {
      isLlmGenerated: false,
      responseProvenance: { schemaVersion: 1, kind: 'static', disclaimerRequired: false, usedLlmInternally: false },
    },
    metadata: { test: true },
  };
}

/**
 * Sends one signed test callback (paused or not: a test is asked for explicitly), records it in
 * recent deliveries, and reports what the receiver did.
 */
export async function sendTestMessage(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  id: string,
): Promise<CallbackPostOutcome & { messageId: string }> {
  const ring = requireMasterKeys(ctx);
  const sub = await requireSubscription(ctx, principal, project, id);
  let secret: string;
  try {
    secret = await openSubscriptionSecret(ctx.models.TenantDataKey, ring, sub);
  } catch {
    throw new DomainError('SERVICE_UNAVAILABLE', 'the signing secret cannot be decrypted (was its master key removed from ENCRYPTION_KEYS?); rotate the secret');
  }
  const messageId = newMessageId();
  const outcome = await postSignedCallback({
    url: sub.callbackUrl,
    secret,
    event: 'agent.response',
    body: testCallbackBody(sub, messageId),
    fetch: destinationGuard(policyOf(ctx)).fetch,
  });
  await recordDeliveryAttempt(ctx.models.HttpAsyncDelivery, {
    tenantId: sub.tenantId,
    projectId: sub.projectId,
    subscriptionId: sub._id,
    messageId,
    event: 'agent.response',
    test: true,
    status: outcome.ok ? 'delivered' : 'failed',
    statusCode: outcome.statusCode,
    latencyMs: outcome.latencyMs,
    error: outcome.error,
  });
  return { ...outcome, messageId };
}

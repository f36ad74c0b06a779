// Public widget keys (db/public-key.ts): made, listed and revoked under a project by its managers,
// and checked on every SDK request together with the page's Origin. A key is read from the store
// on each use (no cache), so a revocation is in force as soon as it is written.
import { randomBytes } from 'node:crypto';
import { DomainError } from '../../lib/errors';
import { safeEqual, sha256Hex } from '../../lib/crypto';
import { type PublicKeyDoc, type PublicKeyWidget, type WidgetPosition } from '../../db/public-key';
import { type CoreContext } from '../context';

export const PUBLIC_KEY_PREFIX = 'pk_';
/** `pk_` followed by 48 lowercase hex characters (192 random bits), like an API key's `abl_`. */
export const PUBLIC_KEY_PATTERN = /^pk_[0-9a-f]{48}$/;
/** Live public keys a project may hold; past it creation is 429 KEY_LIMIT_REACHED. */
export const PUBLIC_KEYS_PER_PROJECT = 20;

/** A change to a key's widget settings: a field left out stays as it is, null clears it. */
export interface WidgetSettingsChange {
  greeting?: string | null;
  title?: string | null;
  theme?: { primaryColor?: string | null; position?: WidgetPosition | null; launcherLabel?: string | null };
}

export interface CreatePublicKeyInput {
  name: string;
  allowedOrigins: string[];
  environment: string;
  allowedAgents?: string[];
  widget?: WidgetSettingsChange;
  createdBy: string | null;
}

export interface UpdatePublicKeyInput {
  name?: string;
  allowedOrigins?: string[];
  allowedAgents?: string[];
  widget?: WidgetSettingsChange;
}

/** The widget settings a key holds, every field present (null when unset). */
export function widgetOf(doc: Pick<PublicKeyDoc, 'widget'>): PublicKeyWidget {
  const w = doc.widget;
  return {
    greeting: w?.greeting ?? null,
    title: w?.title ?? null,
    theme: { primaryColor: w?.theme?.primaryColor ?? null, position: w?.theme?.position ?? null, launcherLabel: w?.theme?.launcherLabel ?? null },
  };
}

/** The `$set` of a widget change, field by field, so the fields it leaves out keep their values. */
function widgetSet(change: WidgetSettingsChange | undefined): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  if (!change) return set;
  if (change.greeting !== undefined) set['widget.greeting'] = change.greeting;
  if (change.title !== undefined) set['widget.title'] = change.title;
  for (const field of ['primaryColor', 'position', 'launcherLabel'] as const) {
    if (change.theme?.[field] !== undefined) set[`widget.theme.${field}`] = change.theme[field];
  }
  return set;
}

/** Creates a key; the plain key is returned once and only its hash is stored. */
export async function createPublicKey(ctx: Pick<CoreContext, 'models'>, owner: { tenantId: string; projectId: string }, input: CreatePublicKeyInput) {
  const live = await ctx.models.PublicKey.countDocuments({ tenantId: owner.tenantId, projectId: owner.projectId, revokedAt: null });
  if (live >= PUBLIC_KEYS_PER_PROJECT) throw new DomainError('KEY_LIMIT_REACHED', `A project holds at most ${PUBLIC_KEYS_PER_PROJECT} live public keys; revoke one first`);
  const key = PUBLIC_KEY_PREFIX + randomBytes(24).toString('hex');
  const doc = await ctx.models.PublicKey.create({
    tenantId: owner.tenantId,
    projectId: owner.projectId,
    name: input.name,
    keyHash: sha256Hex(key),
    keyPrefix: key.slice(0, 11),
    allowedOrigins: [...new Set(input.allowedOrigins)],
    environment: input.environment,
    allowedAgents: [...new Set(input.allowedAgents ?? [])],
    widget: {
      greeting: input.widget?.greeting ?? null,
      title: input.widget?.title ?? null,
      theme: { primaryColor: input.widget?.theme?.primaryColor ?? null, position: input.widget?.theme?.position ?? null, launcherLabel: input.widget?.theme?.launcherLabel ?? null },
    },
    createdBy: input.createdBy,
  });
  return { key, publicKey: doc.toObject() };
}

/**
 * Changes a live key's name, origins, agents or widget settings; 404 when it is not a live key of this
 * project. Its environment never changes (the tokens it issued are bound to it). Taking an origin
 * off the list ends the tokens issued to that origin at once (api/middleware/auth.ts).
 */
export async function updatePublicKey(ctx: Pick<CoreContext, 'models'>, owner: { tenantId: string; projectId: string }, keyId: string, input: UpdatePublicKeyInput): Promise<PublicKeyDoc> {
  const filter = { _id: keyId, tenantId: owner.tenantId, projectId: owner.projectId, revokedAt: null };
  const set: Record<string, unknown> = { ...widgetSet(input.widget) };
  if (input.name !== undefined) set.name = input.name;
  if (input.allowedOrigins !== undefined) set.allowedOrigins = [...new Set(input.allowedOrigins)];
  if (input.allowedAgents !== undefined) set.allowedAgents = [...new Set(input.allowedAgents)];
  const doc = await ctx.models.PublicKey.findOneAndUpdate(filter, { $set: set }, { new: true }).lean();
  if (!doc) throw DomainError.notFound('Public key');
  return doc;
}

export function listPublicKeys(ctx: Pick<CoreContext, 'models'>, owner: { tenantId: string; projectId: string }) {
  return ctx.models.PublicKey.find({ tenantId: owner.tenantId, projectId: owner.projectId }).sort({ createdAt: -1, _id: 1 }).lean();
}

/** Marks the key revoked (kept for the record); 404 when it is not a key of this project. */
export async function revokePublicKey(ctx: Pick<CoreContext, 'models'>, owner: { tenantId: string; projectId: string }, keyId: string): Promise<PublicKeyDoc> {
  const filter = { _id: keyId, tenantId: owner.tenantId, projectId: owner.projectId };
  await ctx.models.PublicKey.updateOne({ ...filter, revokedAt: null }, { $set: { revokedAt: new Date() } });
  const doc = await ctx.models.PublicKey.findOne(filter).lean();
  if (!doc) throw DomainError.notFound('Public key');
  return doc;
}

/** What a client may see of a key: never its hash. */
export function presentPublicKey(doc: PublicKeyDoc) {
  return {
    id: doc._id,
    projectId: doc.projectId,
    name: doc.name,
    keyPrefix: doc.keyPrefix,
    allowedOrigins: doc.allowedOrigins,
    environment: doc.environment,
    allowedAgents: doc.allowedAgents ?? [],
    widget: widgetOf(doc),
    permissions: ['chat'] as const,
    status: doc.revokedAt ? ('revoked' as const) : ('active' as const),
    revokedAt: doc.revokedAt ? doc.revokedAt.toISOString() : null,
    createdAt: doc.createdAt.toISOString(),
  };
}

/**
 * The live key a request presents, checked against the page's Origin: 401 for a missing,
 * malformed, unknown or revoked key; 403 when the request has no Origin or one the key does not
 * list. The key's hash is compared in constant time after the lookup.
 */
export async function requirePublicKey(ctx: Pick<CoreContext, 'models'>, key: string | undefined, origin: string | undefined): Promise<PublicKeyDoc> {
  if (!key) throw new DomainError('UNAUTHORIZED', 'A public key is required');
  if (!PUBLIC_KEY_PATTERN.test(key)) throw new DomainError('UNAUTHORIZED', 'Invalid public key');
  const keyHash = sha256Hex(key);
  const doc = await ctx.models.PublicKey.findOne({ keyHash }).lean();
  if (!doc || !safeEqual(doc.keyHash, keyHash)) throw new DomainError('UNAUTHORIZED', 'Invalid public key');
  if (doc.revokedAt) throw new DomainError('UNAUTHORIZED', 'Public key has been revoked');
  if (!origin) throw new DomainError('FORBIDDEN', 'An Origin header is required with a public key');
  if (!doc.allowedOrigins.includes(origin)) throw new DomainError('FORBIDDEN', 'This origin is not allowed for the public key');
  return doc;
}

/** Whether any live key lists the origin (a CORS preflight carries no key to check). */
export async function isListedOrigin(ctx: Pick<CoreContext, 'models'>, origin: string): Promise<boolean> {
  return (await ctx.models.PublicKey.exists({ allowedOrigins: origin, revokedAt: null })) !== null;
}

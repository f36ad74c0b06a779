// Finding a voice channel connection and opening what calls and webhooks need of it: the Twilio
// SDK client for its account, and the check that a webhook request really comes from Twilio.
// Every lookup carries the tenant, except a webhook's, which knows only the connection id in its
// URL and is judged by the signature under that connection's own auth token.
import { type ChannelConnectionDoc, openConnectionToken } from '../../db/channel-connection';
import { driverCollection } from '../../db/driver-collection';
import { DomainError } from '../../lib/errors';
import { freshReadsPerOwner } from '../../lib/fresh-reads';
import { isValidTwilioSignature, twilioClient, type TwilioClient } from '../../providers/telephony/twilio-client';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { type CoreContext } from '../context';

/** The connection of a project, or 404 `CHANNEL_NOT_FOUND` (missing and foreign alike). */
export async function requireChannelConnection(ctx: CoreContext, scope: { tenantId: string; projectId: string }, id: string): Promise<ChannelConnectionDoc> {
  const doc = await ctx.models.ChannelConnection.findOne({ _id: id, tenantId: scope.tenantId, projectId: scope.projectId }).lean();
  if (!doc) throw new DomainError('CHANNEL_NOT_FOUND', 'Channel connection not found');
  return doc;
}

const connectionReads = freshReadsPerOwner<ChannelConnectionDoc | null>();

/**
 * A connection by id, the read shared by the requests that ask for it at once (never with a read
 * that began before a request asked, so a change written before it is always seen): a burst of
 * calls placed on one connection, or of their callbacks, costs two reads, not one each. A caller
 * that knows the tenant passes it and the filter carries it; a webhook knows only the id (its
 * signature, checked next under that connection's token, decides). The document is shared:
 * callers never change it.
 */
export function readChannelConnection(ctx: CoreContext, id: string, tenantId?: string): Promise<ChannelConnectionDoc | null> {
  const filter = tenantId === undefined ? { _id: id } : { _id: id, tenantId };
  return connectionReads(ctx.models).read(JSON.stringify([tenantId ?? null, id]), () => driverCollection(ctx.models.ChannelConnection).findOne(filter));
}

/**
 * Auth tokens this process opened, by the sealed value and its place: every webhook of a call
 * needs its connection's token, and opening it reads the tenant's data key (a store round trip)
 * after the connection. A sealed value and its place always open to the same token (data keys
 * never change, the additional data names the place, the GCM tag this sealing), so a new token
 * is a new sealing and misses; the connection itself is still read on every request, so a
 * deletion or a change of account counts at once.
 */
const openedTokens = new Map<string, string>();
const OPENED_TOKENS_KEPT = 1000;

/** The connection's auth token in clear. 503 when its master key is not configured. */
export async function connectionAuthToken(ctx: Pick<CoreContext, 'models' | 'config'>, doc: ChannelConnectionDoc): Promise<string> {
  const cacheKey = JSON.stringify([doc.tenantId, doc.projectId, doc._id, doc.authToken.iv, doc.authToken.tag, doc.authToken.data]);
  const known = openedTokens.get(cacheKey);
  if (known !== undefined) return known;
  const ring = requireMasterKeys(ctx);
  let token: string;
  try {
    token = await openConnectionToken(ctx.models.TenantDataKey, ring, doc);
  } catch {
    throw new DomainError('SERVICE_UNAVAILABLE', 'the connection\'s auth token cannot be decrypted (was its master key removed from ENCRYPTION_KEYS?); set the token again');
  }
  if (openedTokens.size >= OPENED_TOKENS_KEPT) openedTokens.delete(openedTokens.keys().next().value!);
  openedTokens.set(cacheKey, token);
  return token;
}

/** An SDK client for the connection's account (pointed at TWILIO_API_BASE_URL when set). */
export async function connectionTwilioClient(ctx: Pick<CoreContext, 'models' | 'config'>, doc: ChannelConnectionDoc): Promise<TwilioClient> {
  const authToken = await connectionAuthToken(ctx, doc);
  return twilioClient({ accountSid: doc.accountSid, authToken }, { apiBaseUrl: ctx.config.TWILIO_API_BASE_URL });
}

/**
 * The connection a Twilio webhook names, once its `X-Twilio-Signature` is checked: `path` is the
 * request's path and query as received (`req.originalUrl`), signed by Twilio as part of the full
 * URL under PUBLIC_BASE_URL. 403 for a missing connection, a wrong account or a bad signature
 * alike, so a caller learns nothing of which connections exist.
 */
export async function verifyTwilioWebhook(
  ctx: CoreContext,
  connectionId: string,
  request: { path: string; params: Record<string, string>; signature: string | undefined },
): Promise<ChannelConnectionDoc> {
  const refused = () => new DomainError('FORBIDDEN', 'Invalid Twilio signature');
  if (!request.signature) throw refused();
  const doc = await readChannelConnection(ctx, connectionId);
  if (!doc || (request.params.AccountSid !== undefined && request.params.AccountSid !== doc.accountSid)) throw refused();
  const authToken = await connectionAuthToken(ctx, doc);
  const url = ctx.config.PUBLIC_BASE_URL.replace(/\/+$/, '') + request.path;
  if (!isValidTwilioSignature(authToken, request.signature, url, request.params)) throw refused();
  return doc;
}

// Turns the request's credential into a Principal: `Authorization: Bearer <JWT|API key>` or
// `X-API-Key: <API key>`. No credential, a bad one, or two that differ is 401. Room is left for
// SDK tokens, public widget keys and sandbox JWTs: each is one more source in CREDENTIAL_SOURCES
// and one more resolver, and falls under the one-credential rule with the others.
import { type Request } from 'express';
import { decodeProtectedHeader, jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import { ApiError, isDomainError } from '../../lib/errors';
import { safeEqual, sha256Hex } from '../../lib/crypto';
import { API_KEY_PATTERN } from '../../lib/ids';
import { isPermission, type Permission, type Principal } from '../../lib/permissions';
import { type ApiKeyDoc } from '../../db/api-key';
import { type ApiScopeDoc } from '../../db/api-scope';
import { isScopeGrantName, permissionsOfGrants } from '../../lib/api-scopes';
import { driverCollection } from '../../db/driver-collection';
import { FreshReads } from '../../lib/fresh-reads';
import { jwtKeyRing } from '../../lib/jwt-keys';
import { type AppContext } from '../context';
import { verifySdkToken } from '../../core/sdk/session-token';
import { pageOrigin } from '../sdk/cors';

const unauthorized = (message: string) => new ApiError('UNAUTHORIZED', message);

type Credential = { type: 'api_key'; value: string } | { type: 'jwt'; value: string } | { type: 'sdk_token'; value: string };

/** A header that can carry a credential, and how one line of it is read. */
interface CredentialSource {
  /** Lower case, as Node names headers. */
  header: string;
  /** The header's name as documented, for messages. */
  label: string;
  /** The credentials one line carries (none when it is empty); throws 401 when it is unreadable. */
  read(line: string): Credential[];
}

/**
 * Every place a credential can be sent. A request is judged on all of them together, so a
 * credential in one header can never be silently ignored for another in a different one.
 */
const CREDENTIAL_SOURCES: readonly CredentialSource[] = [
  {
    header: 'authorization',
    label: 'Authorization',
    read(line) {
      if (line.length === 0) return [];
      const match = /^Bearer\s+(\S+)\s*$/i.exec(line);
      if (!match?.[1]) throw unauthorized('Authorization header must be "Bearer <token>"');
      const token = match[1];
      return [token.startsWith('abl_') ? { type: 'api_key', value: token } : { type: 'jwt', value: token }];
    },
  },
  {
    header: 'x-api-key',
    label: 'X-API-Key',
    // A list-valued field may reach us folded into one comma-separated line by a proxy (RFC 9110
    // §5.3); a key never holds a comma, so each item is a credential of its own.
    read: (line) =>
      line
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item.length > 0)
        .map((value) => ({ type: 'api_key', value })),
  },
  {
    // An embedded widget's SDK session token (core/sdk/session-token.ts); only routes that take
    // one accept it (api/http/route.ts `sdkToken`).
    header: 'x-sdk-token',
    label: 'X-SDK-Token',
    read: (line) => (line.trim().length === 0 ? [] : [{ type: 'sdk_token', value: line.trim() }]),
  },
];

function sameCredential(a: Credential, b: Credential): boolean {
  // Both come from the caller, so nothing secret is compared; constant time all the same.
  return a.type === b.type && safeEqual(a.value, b.value);
}

/**
 * Reads every credential the request carries, from every source and every repetition of a
 * header (Node keeps only the first of repeated `Authorization` headers in `req.headers`, hence
 * `headersDistinct`), without judging whether it is valid. Returns null when none was sent. Two
 * that are not the same credential are 401 whichever of them is valid: the caller meant one of
 * them, and we cannot know which. The same key sent twice is accepted.
 */
export function readCredential(req: Request): Credential | null {
  const found: { credential: Credential; label: string }[] = [];
  for (const source of CREDENTIAL_SOURCES) {
    for (const line of req.headersDistinct[source.header] ?? []) {
      for (const credential of source.read(line)) found.push({ credential, label: source.label });
    }
  }
  const first = found[0];
  if (!first) return null;
  if (found.some(({ credential }) => !sameCredential(first.credential, credential))) {
    const labels = [...new Set(found.map(({ label }) => label))];
    const where = labels.length === 1 ? `several ${labels[0]} values` : labels.join(' and ');
    throw unauthorized(`Conflicting credentials: ${where} carry different credentials; send exactly one`);
  }
  return first.credential;
}

function toPermissions(values: readonly string[]): ReadonlySet<Permission> {
  return new Set(values.filter(isPermission));
}

/**
 * What this process learned about API keys, by key hash: the key's id (it never changes, so a
 * check reads the key by `_id`, the lookup FerretDB answers from its primary key, instead of
 * searching by hash), the principal it produced and when the read behind it began. For
 * API_KEY_CACHE_MS after that moment a request is answered from the entry without a read; from
 * half that age on, a request also starts one re-read in the background, so a key in steady use
 * is never waited for. A revocation through the API or the CLI waits API_KEY_CACHE_MS before it
 * returns (core/tenancy/accounts.ts), so once it has returned, every entry any process holds comes
 * from a read that began after the revocation was written, and the key is refused everywhere.
 * A key that fails a check is forgotten. Concurrent reads of one key are shared, but never with
 * a read that began before the request (lib/fresh-reads.ts). Bounded; the oldest entries go first.
 */
interface KnownKey {
  keyId: string;
  tenantId: string;
  principal: Principal;
  /** When the key expires (ms since the epoch), or null: an expired key is read again, and refused. */
  expiresAt: number | null;
  /** performance.now() when the request behind this entry asked for its read (the read began later). */
  askedAt: number;
  /** When the key was last used as far as the database said (ms since the epoch), or 0. */
  storedLastUsedAt: number;
  refreshing: boolean;
}
const KNOWN_KEYS_MAX = 10_000;
const knownKeys = new WeakMap<AppContext, Map<string, KnownKey>>();

function knownKeysOf(ctx: AppContext): Map<string, KnownKey> {
  let known = knownKeys.get(ctx);
  if (!known) knownKeys.set(ctx, (known = new Map()));
  return known;
}

/** Key reads by id, shared by the concurrent requests of one key (never with a read older than the request). */
const keyReads = new WeakMap<AppContext, FreshReads<ApiKeyDoc | null>>();

function readKeyById(ctx: AppContext, keyId: string): Promise<ApiKeyDoc | null> {
  let reads = keyReads.get(ctx);
  if (!reads) keyReads.set(ctx, (reads = new FreshReads()));
  // By `_id` alone on purpose: the key is the credential that decides the tenant, so there is no
  // tenant to put in the filter yet (the hash is compared next, in constant time). The driver
  // directly: mongoose's query building costs about a quarter of a millisecond on top of the round trip.
  return reads.read(keyId, () => driverCollection(ctx.models.ApiKey).findOne({ _id: keyId }));
}

async function resolveApiKey(ctx: AppContext, keyHash: string, seen: Pick<KnownKey, 'keyId' | 'tenantId' | 'principal'> | undefined): Promise<Principal> {
  const askedAt = performance.now();
  const knownId = seen?.keyId;
  // A scoped key seen before: its scope is read alongside the key (one round trip, not two).
  const knownScopeId = seen?.principal.scope?.id;
  const scopeRead = seen && knownScopeId ? settleScope(readScopeById(ctx, knownScopeId, seen.tenantId)) : null;
  let doc: ApiKeyDoc | null = knownId ? await readKeyById(ctx, knownId) : null;
  // Compare in constant time so no code path branches on key bytes.
  if (!doc || !safeEqual(doc.keyHash, keyHash)) doc = await ctx.models.ApiKey.findOne({ keyHash }).lean();
  if (!doc || !safeEqual(doc.keyHash, keyHash)) throw unauthorized('Invalid API key');
  if (doc.revokedAt) throw unauthorized('API key has been revoked');
  if (doc.expiresAt && doc.expiresAt.getTime() <= Date.now()) throw unauthorized('API key has expired');
  const principal = await principalOfKey(ctx, doc, doc.scopeId && doc.scopeId === knownScopeId ? scopeRead : null);
  const entry: KnownKey = {
    keyId: doc._id,
    tenantId: doc.tenantId,
    principal,
    expiresAt: doc.expiresAt?.getTime() ?? null,
    askedAt,
    storedLastUsedAt: doc.lastUsedAt?.getTime() ?? 0,
    refreshing: false,
  };
  noteKeyUsed(ctx, entry);
  const known = knownKeysOf(ctx);
  // A read that began earlier than the one behind the entry held never replaces it.
  const held = known.get(keyHash);
  if (held && held.askedAt > askedAt) return principal;
  known.delete(keyHash);
  known.set(keyHash, entry);
  if (known.size > KNOWN_KEYS_MAX) known.delete(known.keys().next().value!);
  return principal;
}

/** Scope reads by id, shared like key reads; the read begins after the request asked, like the key's. */
const scopeReads = new WeakMap<AppContext, FreshReads<ApiScopeDoc | null>>();

function readScopeById(ctx: AppContext, scopeId: string, tenantId: string): Promise<ApiScopeDoc | null> {
  let reads = scopeReads.get(ctx);
  if (!reads) scopeReads.set(ctx, (reads = new FreshReads()));
  return reads.read(`${tenantId}/${scopeId}`, () => driverCollection(ctx.models.ApiScope).findOne({ _id: scopeId, tenantId }));
}

type ScopeRead = { ok: true; scope: ApiScopeDoc | null } | { ok: false };

/** A scope read started early, which must never become an unhandled rejection (a failure reads again). */
function settleScope(read: Promise<ApiScopeDoc | null>): Promise<ScopeRead> {
  return read.then(
    (scope) => ({ ok: true as const, scope }),
    () => ({ ok: false as const }),
  );
}

/**
 * What a key may do. A scoped key holds what its scope grants now (read with the key, so a scope
 * change is seen within the same window as a revocation); a scope that is gone leaves the key
 * nothing to stand on (401). A permission-style key holds its permissions, as always.
 */
async function principalOfKey(ctx: AppContext, doc: ApiKeyDoc, started: Promise<ScopeRead> | null): Promise<Principal> {
  const environments = doc.environments && doc.environments.length > 0 ? [...doc.environments] : null;
  const base = { kind: 'api_key' as const, subjectId: doc._id, tenantId: doc.tenantId, projectId: doc.projectId, environments, expiresAt: doc.expiresAt ?? null };
  if (!doc.scopeId) return { ...base, permissions: toPermissions(doc.permissions), scope: null };
  const read = started ? await started : null;
  const scope = read?.ok ? read.scope : await readScopeById(ctx, doc.scopeId, doc.tenantId);
  if (!scope || scope.projectId !== doc.projectId) throw unauthorized('Invalid API key');
  const grants = new Set(scope.grants.filter(isScopeGrantName));
  return { ...base, permissions: permissionsOfGrants(grants), scope: { id: scope._id, grants } };
}

/** The entry when this request may be answered from it: young enough and not expired. */
function answerableFrom(ctx: AppContext, known: KnownKey): boolean {
  if (known.expiresAt !== null && known.expiresAt <= Date.now()) return false;
  return performance.now() - known.askedAt < ctx.config.API_KEY_CACHE_MS;
}

/** From half the entry's allowed age on, one re-read runs in the background; a refusal forgets the key. */
function refreshWhenAgeing(ctx: AppContext, keyHash: string, known: KnownKey): void {
  if (known.refreshing || performance.now() - known.askedAt < ctx.config.API_KEY_CACHE_MS / 2) return;
  known.refreshing = true;
  resolveApiKey(ctx, keyHash, known)
    .catch(() => knownKeysOf(ctx).delete(keyHash))
    .finally(() => {
      known.refreshing = false;
    });
}

/** When this process last wrote each key's last-used time (ms), so it writes at most once a minute. */
const usageWrites = new WeakMap<AppContext, Map<string, number>>();

/**
 * Coarse last-used tracking, off the request path, in api_key_usage: never in the key document,
 * which a revocation writes (db/api-key-usage.ts says why).
 */
function noteKeyUsed(ctx: AppContext, key: Pick<KnownKey, 'keyId' | 'tenantId' | 'storedLastUsedAt'>): void {
  let written = usageWrites.get(ctx);
  if (!written) usageWrites.set(ctx, (written = new Map()));
  const now = Date.now();
  if (now - (written.get(key.keyId) ?? key.storedLastUsedAt) <= 60_000) return;
  written.delete(key.keyId);
  written.set(key.keyId, now);
  if (written.size > KNOWN_KEYS_MAX) written.delete(written.keys().next().value!);
  driverCollection(ctx.models.ApiKeyUsage)
    .updateOne({ _id: key.keyId, tenantId: key.tenantId }, { $set: { lastUsedAt: new Date(now) } }, { upsert: true })
    .catch(() => undefined);
}

/**
 * Verifies a user JWT with the key its `kid` names (the current JWT_SECRET or one of
 * JWT_PREVIOUS_SECRETS). A token without a `kid` (issued before tokens named their key) is tried
 * with each key of the ring; an unknown `kid` is refused.
 */
async function verifyUserJwt(ctx: AppContext, token: string) {
  const ring = jwtKeyRing(ctx.config);
  const options = { issuer: ctx.config.JWT_ISSUER, audience: 'switchboard-api', algorithms: ['HS256'] };
  const tryKeys = async (keys: Uint8Array[]) => {
    for (const [index, key] of keys.entries()) {
      try {
        return await jwtVerify(token, key, options);
      } catch (err) {
        if (!(err instanceof joseErrors.JWSSignatureVerificationFailed) || index === keys.length - 1) throw err;
      }
    }
    throw unauthorized('Invalid token');
  };
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    throw unauthorized('Invalid token');
  }
  if (kid === undefined) return tryKeys(ring.all.map((k) => k.key));
  const named = ring.all.find((k) => k.kid === kid);
  if (!named) throw unauthorized('Invalid token');
  return tryKeys([named.key]);
}

async function resolveUserJwt(ctx: AppContext, token: string): Promise<Principal> {
  let subject: string | undefined;
  try {
    const { payload } = await verifyUserJwt(ctx, token);
    subject = payload.sub;
  } catch (err) {
    if (isDomainError(err)) throw err;
    if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token has expired');
    throw unauthorized('Invalid token');
  }
  if (!subject) throw unauthorized('Invalid token');
  // Re-read the user so that disabling or deleting a user takes effect at once. By id alone: the
  // signed token's subject is what decides the tenant.
  const user = await ctx.models.User.findById(subject).lean();
  if (!user || user.disabledAt) throw unauthorized('Invalid token');
  return {
    kind: 'user_jwt',
    subjectId: user._id,
    tenantId: user.tenantId,
    projectId: null,
    permissions: toPermissions(user.permissions),
  };
}

/**
 * An SDK session token's principal: it may run chat turns in its project and environment, from
 * the page origin it was issued to, while the public key that issued it is live and lists it. 401 for a bad
 * or expired token or a revoked key; 403 when the request's Origin is not the token's.
 */
async function resolveSdkToken(ctx: AppContext, token: string, origin: string | undefined): Promise<Principal> {
  const claims = await verifySdkToken(ctx, token);
  const key = await ctx.models.PublicKey.findOne({ _id: claims.publicKeyId, tenantId: claims.tenantId, projectId: claims.projectId }, { revokedAt: 1, allowedOrigins: 1, allowedAgents: 1 }).lean();
  if (!key || key.revokedAt) throw unauthorized('SDK token has been revoked');
  if (origin !== claims.origin) throw new ApiError('FORBIDDEN', 'This origin is not the one the SDK token was issued to');
  // An origin taken off the key's list since the token was issued is refused from then on.
  if (!key.allowedOrigins.includes(origin)) throw new ApiError('FORBIDDEN', 'This origin is no longer allowed for the public key');
  return {
    kind: 'sdk_token',
    subjectId: claims.endUserId,
    tenantId: claims.tenantId,
    projectId: claims.projectId,
    // Only the routes marked `sdkToken` take the token at all (api/http/route.ts); among them it
    // reads and continues its own end user's sessions.
    permissions: new Set<Permission>(['session:execute', 'session:read']),
    scope: null,
    environments: [claims.environment],
    expiresAt: null,
    sdk: { endUserId: claims.endUserId, origin: claims.origin, publicKeyId: claims.publicKeyId, user: claims.user ?? null, allowedAgents: key.allowedAgents ?? [] },
  };
}

export interface Authentication {
  /**
   * The principal this credential produced last time in this process, when known: enough to
   * start read-only lookups early. Nothing may be changed on its word before `confirmed`.
   */
  early: Principal | null;
  /** The principal as the credential stands (see KnownKey for how fresh); rejects with 401. */
  confirmed: Promise<Principal>;
}

/** Starts resolving the request's credential. A missing or malformed one throws 401 at once. */
export function beginAuthentication(ctx: AppContext, req: Request): Authentication {
  const credential = readCredential(req);
  if (!credential) throw unauthorized('Authentication required: send Authorization: Bearer <token> or X-API-Key');
  if (credential.type === 'jwt') return { early: null, confirmed: resolveUserJwt(ctx, credential.value) };
  if (credential.type === 'sdk_token') return { early: null, confirmed: resolveSdkToken(ctx, credential.value, pageOrigin(req)) };
  if (!API_KEY_PATTERN.test(credential.value)) throw unauthorized('Invalid API key');
  const keyHash = sha256Hex(credential.value);
  const knownKeys = knownKeysOf(ctx);
  const known = knownKeys.get(keyHash);
  if (known && answerableFrom(ctx, known)) {
    refreshWhenAgeing(ctx, keyHash, known);
    noteKeyUsed(ctx, known);
    return { early: known.principal, confirmed: Promise.resolve(known.principal) };
  }
  const confirmed = resolveApiKey(ctx, keyHash, known).catch((err: unknown) => {
    // Revoked, expired, deleted, or the read failed: nothing starts early for it any more.
    knownKeys.delete(keyHash);
    throw err;
  });
  const usable = known && (known.expiresAt === null || known.expiresAt > Date.now());
  return { early: usable ? known.principal : null, confirmed };
}

/**
 * Why the request's API key would be refused now, or null while it is accepted (or cannot be
 * checked: a failed read refuses nothing here). For work that outlives the start of its request.
 */
export async function apiKeyRefusal(ctx: AppContext, req: Request): Promise<string | null> {
  try {
    await beginAuthentication(ctx, req).confirmed;
    return null;
  } catch (err) {
    return isDomainError(err) && err.code === 'UNAUTHORIZED' ? err.message : null;
  }
}

/** Resolves the request's credential, or throws 401. */
export async function authenticate(ctx: AppContext, req: Request): Promise<Principal> {
  return beginAuthentication(ctx, req).confirmed;
}

/** Issues a user JWT (HS256) for `sub`, valid for JWT_TTL_SECONDS. */
export async function issueUserToken(ctx: Pick<AppContext, 'config'>, userId: string, tenantId: string) {
  const expiresAt = new Date(Date.now() + ctx.config.JWT_TTL_SECONDS * 1000);
  const signing = jwtKeyRing(ctx.config).current;
  const token = await new SignJWT({ tid: tenantId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: signing.kid })
    .setSubject(userId)
    .setIssuer(ctx.config.JWT_ISSUER)
    .setAudience('switchboard-api')
    .setIssuedAt()
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .sign(signing.key);
  return { token, expiresAt };
}

// Public widget keys under a project (create, list, revoke: `agent:write`, which `admin` holds)
// and the SDK bootstrap a page's widget calls with one: `POST /api/v1/sdk/init` (a short-lived
// SDK session token) and `GET /api/v1/sdk/config/:projectId` (what the widget shows). Both are
// refused unless the page's Origin is one the key lists. docs/widget.md.
import { type Request, type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { liveKitConfigured } from '../../lib/config';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { consumeRateLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { type AppContext } from '../context';
import { type PublicKeyDoc } from '../../db/public-key';
import { createPublicKey, listPublicKeys, presentPublicKey, PUBLIC_KEYS_PER_PROJECT, requirePublicKey, revokePublicKey, updatePublicKey, widgetOf } from '../../core/sdk/public-keys';
import { issueSdkToken, newAnonymousEndUserId, renewableSdkToken, SDK_RENEWAL_WINDOW_SECONDS, type SdkTokenClaims } from '../../core/sdk/session-token';
import { identifiedEndUserId, identitySecretOf, verifyUserAssertion } from '../../core/sdk/user-assertion';
import { resolveNewSessionTarget } from '../../core/sessions/target';
import { ALLOWED_TYPES } from '../../core/attachments/types';
import { allowOrigin, pageOrigin } from './cors';
import {
  ZCreatedPublicKeyResponse,
  ZIdentitySecretResponse,
  ZCreatePublicKeyRequest,
  ZPublicKeyListResponse,
  ZPublicKeyParams,
  ZPublicKeyResponse,
  ZSdkConfigResponse,
  ZSdkInitRequest,
  ZSdkInitResponse,
  ZUpdatePublicKeyRequest,
} from './schemas';

const KEY_TAGS = ['Public widget keys'];
const SDK_TAGS = ['Widget and SDK'];

const firstHeader = (req: Request, name: string): string | undefined => {
  const values = req.headersDistinct[name];
  // Two values are never a key: refused like a missing one would be, below.
  return values && values.length === 1 ? values[0]!.trim() : values && values.length > 1 ? '' : undefined;
};

/**
 * Checks the public key the header carries against the page's Origin (401, 403), charges the
 * key's tenant one request (429) and, for an allowed origin, adds the CORS headers; the key is
 * kept for the handler.
 */
async function authorizeSdk(ctx: AppContext, req: Request, header: 'x-public-key' | 'x-api-key'): Promise<void> {
  const origin = pageOrigin(req);
  const key = await requirePublicKey(ctx, firstHeader(req, header), origin);
  const res = req.res!;
  allowOrigin(res, origin!);
  await consumeRateLimit(ctx.rateLimiter, tenantRateLimitKey(key.tenantId), res);
  res.locals.publicKey = key;
}

const keyOf = (res: Response): PublicKeyDoc => res.locals.publicKey as PublicKeyDoc;

/**
 * Whether a previous token of this page was issued by this very key, for its project and
 * environment, to the origin asking now: only such a token may hand its end user on.
 */
function issuedHere(previous: SdkTokenClaims | null, key: PublicKeyDoc, origin: string): previous is SdkTokenClaims {
  return (
    previous !== null &&
    previous.tenantId === key.tenantId &&
    previous.projectId === key.projectId &&
    previous.publicKeyId === key._id &&
    previous.environment === key.environment &&
    previous.origin === origin
  );
}

/** A key of another project than the one the request names is as good as no project: 404. */
function requireKeyProject(key: PublicKeyDoc, projectId: string): void {
  if (key.projectId !== projectId) throw ApiError.notFound('Project');
}

export const sdkRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/public-keys',
    operationId: 'createPublicKey',
    summary: 'Create a public widget key (the key is shown once)',
    description:
      `A \`pk_\` key a web page may hold: it can only start chats with the project's agents (SDK init and config), only from the listed origins, ` +
      `and its chats run in the key's environment, starting with its entry agent or one the key lists in \`allowedAgents\`. 429 (KEY_LIMIT_REACHED) when the project holds ${PUBLIC_KEYS_PER_PROJECT} live public keys.`,
    tags: KEY_TAGS,
    auth: 'agent:write',
    params: ZProjectIdParam,
    body: ZCreatePublicKeyRequest,
    bodyExample: { name: 'Shop widget', allowedOrigins: ['https://shop.example.com'], environment: 'production' },
    successStatus: 201,
    links: linksTo(['revokePublicKey', 'updatePublicKey'], { projectId: '$request.path.projectId', keyId: '$response.body#/publicKey/id' }),
    errorStatuses: [429],
    response: ZCreatedPublicKeyResponse,
    async handler({ ctx, principal, project, body }) {
      const { key, publicKey } = await createPublicKey(ctx, { tenantId: project!.tenantId, projectId: project!._id }, { ...body, createdBy: principal.subjectId });
      return { success: true, publicKey: { ...presentPublicKey(publicKey), key, identitySecret: identitySecretOf(ctx, publicKey._id) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/public-keys',
    operationId: 'listPublicKeys',
    summary: "List the project's public widget keys, revoked ones included (never the keys themselves)",
    tags: KEY_TAGS,
    auth: 'agent:write',
    params: ZProjectIdParam,
    response: ZPublicKeyListResponse,
    async handler({ ctx, project }) {
      const keys = await listPublicKeys(ctx, { tenantId: project!.tenantId, projectId: project!._id });
      return { success: true, publicKeys: keys.map(presentPublicKey) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/public-keys/:keyId',
    operationId: 'revokePublicKey',
    summary: 'Revoke a public widget key: refused from the moment this returns (tokens it issued live out their short lifetime)',
    tags: KEY_TAGS,
    auth: 'agent:write',
    params: ZPublicKeyParams,
    response: ZPublicKeyResponse,
    async handler({ ctx, project, params }) {
      const doc = await revokePublicKey(ctx, { tenantId: project!.tenantId, projectId: project!._id }, params.keyId);
      return { success: true, publicKey: presentPublicKey(doc) };
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/projects/:projectId/public-keys/:keyId',
    operationId: 'updatePublicKey',
    summary: "Change a public widget key's name, allowed origins, allowed agents or widget settings",
    description:
      'Send any of `name`, `allowedOrigins` (replaces the list), `allowedAgents` (replaces the list) and `widget` (greeting, title, theme: a field left out stays, null clears it). ' +
      'The environment never changes. SDK tokens issued to an origin taken off the list stop working at once (403). 404 when the key is not one of the project\'s or is revoked.',
    tags: KEY_TAGS,
    auth: 'agent:write',
    params: ZPublicKeyParams,
    body: ZUpdatePublicKeyRequest,
    bodyExample: { widget: { greeting: 'Hi! How can we help?', title: 'Support', theme: { primaryColor: '#0b5fff', position: 'bottom-right' } } },
    errorStatuses: [404],
    response: ZPublicKeyResponse,
    async handler({ ctx, project, params, body }) {
      const doc = await updatePublicKey(ctx, { tenantId: project!.tenantId, projectId: project!._id }, params.keyId, body);
      return { success: true, publicKey: presentPublicKey(doc) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/public-keys/:keyId/identity-secret',
    operationId: 'getPublicKeyIdentitySecret',
    summary: "A public key's identity secret, which your backend signs user assertions with (docs/widget.md)",
    description: '404 when the key is not one of the project\'s or is revoked. The secret follows the current master key: read it again after a master key rotation.',
    tags: KEY_TAGS,
    auth: 'agent:write',
    params: ZPublicKeyParams,
    response: ZIdentitySecretResponse,
    async handler({ ctx, project, params }) {
      const doc = await ctx.models.PublicKey.findOne({ _id: params.keyId, tenantId: project!.tenantId, projectId: project!._id, revokedAt: null }).lean();
      if (!doc) throw ApiError.notFound('Public key');
      return { success: true, keyId: doc._id, identitySecret: identitySecretOf(ctx, doc._id) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/sdk/init',
    operationId: 'sdkInit',
    summary: 'Start an SDK session: a short-lived token for the widget (X-Public-Key)',
    description:
      'Header `X-Public-Key: pk_…` and the page\'s `Origin`, which the key must list (401 for a missing, unknown or revoked key; 403 for a missing or unlisted origin). ' +
      'With `userAssertion` (an HS256 JWT your backend signs with the key\'s identity secret: `aud` the key id, `sub` your user id, optional `email`, `phone`, `name`, `iat` and `exp` at most an hour apart; 401 when invalid) the end user is that user, the same on every init, and its chats link to its contact; without, a new anonymous end user. ' +
      'Returns an SDK session token for the end user, bound to the tenant, the project, the origin and the key\'s environment; send it as `X-SDK-Token`. ' +
      `To renew a token (they live SDK_TOKEN_TTL_SECONDS), send the one held as \`previousToken\`: its anonymous end user is kept (\`renewed: true\`) when the token is genuine, expired at most ${SDK_RENEWAL_WINDOW_SECONDS / 86400} days ago, and was issued by this key for this project to this origin; otherwise init answers a new anonymous end user (\`renewed: false\`), never an error. ` +
      'An identified user is always the one its assertion names.',
    tags: SDK_TAGS,
    auth: 'public',
    authorize: ({ ctx, req }) => authorizeSdk(ctx, req, 'x-public-key'),
    body: ZSdkInitRequest,
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x' },
    errorStatuses: [401, 403, 404, 429, 503],
    response: ZSdkInitResponse,
    async handler({ ctx, body, res }) {
      const key = keyOf(res);
      requireKeyProject(key, body.projectId);
      const origin = pageOrigin(res.req)!;
      const [user, previous] = await Promise.all([
        body.userAssertion ? verifyUserAssertion(ctx, key._id, body.userAssertion) : null,
        body.previousToken ? renewableSdkToken(ctx, body.previousToken) : null,
      ]);
      const here = issuedHere(previous, key, origin);
      // An anonymous end user is carried over; an identified one is whoever the assertion names.
      const carried = here && previous.endUserId.startsWith('eu-') ? previous.endUserId : null;
      const endUserId = user ? identifiedEndUserId(key.projectId, user.userId) : (carried ?? newAnonymousEndUserId());
      const renewed = here && previous.endUserId === endUserId;
      const { token, expiresAt } = await issueSdkToken(ctx, {
        tenantId: key.tenantId,
        projectId: key.projectId,
        publicKeyId: key._id,
        origin,
        environment: key.environment,
        endUserId,
        user,
      });
      return { success: true, token, expiresAt: expiresAt.toISOString(), endUserId, identified: user !== null, renewed, projectId: key.projectId, environment: key.environment };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/sdk/config/:projectId',
    operationId: 'sdkConfig',
    summary: 'What the widget needs to show itself (X-API-Key: pk_…)',
    description:
      "Header `X-API-Key: pk_…` and an `Origin` the key lists (401, 403 as for SDK init). 404 when the key is another project's. " +
      "Greeting, title and theme are the key's widget settings (PATCH …/public-keys/:keyId); uploads are the limits of the session attachment upload, which takes the SDK token.",
    tags: SDK_TAGS,
    auth: 'public',
    authorize: ({ ctx, req }) => authorizeSdk(ctx, req, 'x-api-key'),
    projectLookup: 'handler',
    params: ZProjectIdParam,
    errorStatuses: [401, 403, 404, 429, 503],
    response: ZSdkConfigResponse,
    async handler({ ctx, params, res }) {
      const key = keyOf(res);
      requireKeyProject(key, params.projectId);
      // The agent a new chat would start with; none yet (no agents, or none in the environment) is null.
      const entry = await resolveNewSessionTarget(ctx.models, { tenantId: key.tenantId, projectId: key.projectId }, { environment: key.environment }).then(
        ({ agent }) => ({ id: agent.agentId, name: agent.agentName }),
        () => null,
      );
      const widget = widgetOf(key);
      return {
        success: true,
        projectId: key.projectId,
        environment: key.environment,
        entryAgent: entry,
        greeting: widget.greeting,
        title: widget.title,
        theme: { primaryColor: widget.theme.primaryColor, position: widget.theme.position ?? 'bottom-right', launcherLabel: widget.theme.launcherLabel },
        // The widget's microphone button: real-time voice is configured and there is an agent to talk to.
        voice: { enabled: liveKitConfigured(ctx.config) && entry !== null },
        // What POST …/sessions/:id/attachments takes with an SDK token.
        uploads: {
          enabled: true,
          maxFileSize: ctx.config.ATTACHMENT_MAX_BYTES,
          maxFilesPerSession: ctx.config.ATTACHMENTS_MAX_PER_SESSION,
          allowedMimeTypes: ALLOWED_TYPES.map((t) => t.mimeType),
        },
        streaming: true as const,
      };
    },
  }),
];

// POST /api/v1/memory: sandboxed tool code reads, writes and deletes its session's memory stores
// (docs/memory.md, "Memory stores"). The only credential is the sandbox token the runtime issued
// for the call (core/memory-stores/sandbox-token.ts), checked before the body is read, so an
// anonymous caller costs a header check; the token's tenant is charged the tenant rate limit.
import { type Request } from 'express';
import { defineRoute, type AnyRoute } from '../http/route';
import { ApiError } from '../../lib/errors';
import { type AppContext } from '../context';
import { consumeRateLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { sandboxTokenKey, type SandboxTokenClaims, verifySandboxToken } from '../../core/memory-stores/sandbox-token';
import { deleteStore, getStore, MEMORY_STORE_LIMITS, setStore } from '../../core/memory-stores/stores';
import { MEMORY_BODY_BYTES, type MemoryRequest, ZMemoryRequest, ZMemoryResponse } from './schemas';

/** The claims of the request's token, from `authorize` to the handler. */
const claimsOf = new WeakMap<Request, SandboxTokenClaims>();

/** 503 when sandbox auth is not configured, 401 without a valid token, 400 for one without a session; then the tenant's charge. */
async function authorizeSandbox({ ctx, req }: { ctx: AppContext; req: Request }): Promise<void> {
  sandboxTokenKey(ctx);
  const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  if (!token) throw new ApiError('UNAUTHORIZED', 'A sandbox token is required: Authorization: Bearer <token>');
  const claims = await verifySandboxToken(ctx, token);
  await consumeRateLimit(ctx.rateLimiter, tenantRateLimitKey(claims.tenantId), req.res!);
  claimsOf.set(req, claims);
}

export const memoryRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/memory',
    operationId: 'memoryStore',
    summary: 'Read, write or delete a memory store of the session a sandbox token names',
    description:
      'For sandboxed tool code (`memory.get_content`, `memory.set_content`, `memory.delete_content`). Credential: ' +
      '`Authorization: Bearer <sandbox token>`, the short-lived token the runtime issues for one tool call; API keys and user ' +
      'tokens are not accepted. The token names the tenant, project and session; stores belong to that session, last across ' +
      'its turns and are deleted when it ends. `get` answers `data`: the stored object, or `null` for a store never set; ' +
      '`set` answers `{ success: true }`; `delete` answers `data.deleted`. ' +
      `Limits: content ${MEMORY_STORE_LIMITS.contentBytes / 1024} KB as JSON (413 MEMORY_STORE_CONTENT_TOO_LARGE), ` +
      `${MEMORY_STORE_LIMITS.storesPerSession} stores per session (413 MEMORY_STORE_LIMIT_REACHED), body ${MEMORY_BODY_BYTES / 1024} KB (413 PAYLOAD_TOO_LARGE), ` +
      `store name ${MEMORY_STORE_LIMITS.nameChars} characters (400). ` +
      '400 missing or unknown action, missing store name, set without `payload.content`, "Token missing sessionId"; ' +
      '401 absent, invalid or expired token; 404 "Session not found" when the session is not active (ended, deleted, unknown); ' +
      '429 the tenant rate limit; 503 "Sandbox auth not configured".',
    tags: ['Memory'],
    auth: 'public',
    authorize: authorizeSandbox,
    bodyLimit: { bytes: MEMORY_BODY_BYTES },
    body: ZMemoryRequest,
    bodyExample: { action: 'set', memoryStoreName: 'cart', payload: { content: { items: ['sku-1'], step: 2 } } },
    errorStatuses: [401, 404, 413, 429, 503],
    response: ZMemoryResponse,
    async handler({ ctx, req, body }) {
      const claims = claimsOf.get(req);
      if (!claims) throw new ApiError('UNAUTHORIZED', 'A sandbox token is required: Authorization: Bearer <token>');
      const request = body as MemoryRequest;
      const name = request.memoryStoreName;
      switch (request.action) {
        case 'get':
          return { success: true, data: await getStore(ctx.models, claims, name) };
        case 'set':
          await setStore(ctx.models, claims, name, request.payload.content);
          return { success: true };
        case 'delete':
          return { success: true, data: { deleted: await deleteStore(ctx.models, claims, name) } };
      }
    },
  }),
];

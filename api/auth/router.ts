// How a JWT is obtained (the spec leaves it open): log in with email and password.
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { verifyPassword } from '../../lib/crypto';
import { defineRoute, type AnyRoute } from '../http/route';
import { issueUserToken } from '../middleware/auth';
import { beginLoginAttempt } from './login-throttle';
import { ZEmail } from '../http/schemas';

// A fixed hash to spend the same scrypt time when the email is unknown (no user enumeration).
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

export const authRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/auth/login',
    operationId: 'login',
    summary: 'Exchange email and password for a JWT',
    description:
      'Returns a bearer token valid for JWT_TTL_SECONDS. Failed attempts are limited per client address and email ' +
      '(LOGIN_FAILURES_PER_IP_EMAIL, 10 by default) and per client address (LOGIN_FAILURES_PER_IP, 100) in each ' +
      'LOGIN_WINDOW_SECONDS (900); past either, 429 with Retry-After. A successful login forgives its address the failures with that email.',
    tags: ['Auth'],
    auth: 'public',
    bodyExample: { email: 'ada@example.com', password: 'correct horse battery staple' },
    body: z.object({ email: ZEmail, password: z.string().min(1).max(256) }),
    errorStatuses: [401, 429],
    response: z.object({
      success: z.literal(true),
      token: z.string(),
      tokenType: z.literal('Bearer'),
      expiresAt: z.string(),
    }),
    async handler({ ctx, req, body }) {
      const email = body.email.toLowerCase();
      const attempt = await beginLoginAttempt(ctx, req, email);
      const user = await ctx.models.User.findOne({ email }).lean();
      const ok = await verifyPassword(body.password, user?.passwordHash ?? DUMMY_HASH);
      if (!user || !ok || user.disabledAt) throw new ApiError('UNAUTHORIZED', 'Invalid email or password');
      await attempt.succeeded();
      const { token, expiresAt } = await issueUserToken(ctx, user._id, user.tenantId);
      return { success: true, token, tokenType: 'Bearer', expiresAt: expiresAt.toISOString() };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/auth/me',
    operationId: 'getCurrentPrincipal',
    summary: 'Who the credential belongs to',
    tags: ['Auth'],
    auth: 'authenticated',
    response: z.object({
      success: z.literal(true),
      principal: z.object({
        kind: z.enum(['api_key', 'user_jwt']),
        id: z.string(),
        tenantId: z.string(),
        projectId: z.string().nullable(),
        permissions: z.array(z.string()).describe("A scoped key's: what its scope's names map to"),
        scopeId: z.string().nullable().describe('A scoped platform key: its scope (`as-` id)'),
        grants: z.array(z.string()).describe('A scoped key: the scope names set to YES'),
        environments: z.array(z.string()).describe('Environments the credential may act in; empty means all'),
      }),
    }),
    async handler({ principal }) {
      return {
        success: true,
        principal: {
          kind: principal.kind,
          id: principal.subjectId,
          tenantId: principal.tenantId,
          projectId: principal.projectId,
          permissions: [...principal.permissions],
          scopeId: principal.scope?.id ?? null,
          grants: [...(principal.scope?.grants ?? [])],
          environments: [...(principal.environments ?? [])],
        },
      };
    },
  }),
];

// The operator credential for the /api/admin/* routes (tenant management, the readiness detail):
// `X-Platform-Admin-Token` equal to PLATFORM_ADMIN_TOKEN. No tenant credential reaches these
// routes: what they show or change belongs to the platform, not to a tenant.
import { type Request } from 'express';
import { ApiError } from '../../lib/errors';
import { safeEqual } from '../../lib/crypto';
import { type AppContext } from '../context';

/** Throws 401 unless the request carries the operator token; 503 when none is configured. */
export function requirePlatformAdmin(ctx: AppContext, req: Request, feature: string): void {
  const expected = ctx.config.PLATFORM_ADMIN_TOKEN;
  const given = req.headers['x-platform-admin-token'];
  if (!expected) throw new ApiError('SERVICE_UNAVAILABLE', `${feature} is disabled: PLATFORM_ADMIN_TOKEN is not set`);
  if (typeof given !== 'string' || !safeEqual(given, expected)) {
    throw new ApiError('UNAUTHORIZED', 'A valid X-Platform-Admin-Token header is required');
  }
}

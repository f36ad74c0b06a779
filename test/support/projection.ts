// Sessions write their transcript, trace and summary rows shortly after each turn (see
// SESSION_PROJECTION_FLUSH_MS); tests that read MongoDB directly ask the session to write first,
// as the API's own reads do.
import { flushSessionProjection } from '../../core/sessions/read';
import { type AppContext } from '../../api/context';

export async function flushProjection(ctx: AppContext, sessionId: string): Promise<void> {
  const session = await ctx.models.Session.findById(sessionId).lean();
  if (session) await flushSessionProjection(ctx, session);
}

// A session's message budget as the API keeps it: the SESSION_MESSAGES_PER_MINUTE limiter, whose
// charge also sets the response's rate-limit headers (core/sessions/message-budget.ts).
import { type Response } from 'express';
import { type MessageBudget } from '../../core/sessions/message-budget';
import { type AppContext } from '../context';
import { consumeRateLimit, refundRateLimit } from '../middleware/rate-limit';

export function sessionMessageBudget(ctx: AppContext, res: Response): MessageBudget {
  return {
    charge: (limiterKey) => consumeRateLimit(ctx.sessionMessageLimiter, limiterKey, res, 'Session message rate limit exceeded'),
    refund: (limiterKey) => refundRateLimit(ctx.sessionMessageLimiter, limiterKey),
  };
}

// A session's message budget (SESSION_MESSAGES_PER_MINUTE) as the caller keeps it: the API charges
// it with its rate limiter and sets the rate-limit headers (api/sessions/message-budget.ts).

/** `charge` takes one message for the key or throws the 429; `refund` hands one back. */
export interface MessageBudget {
  charge(limiterKey: string): Promise<void>;
  refund(limiterKey: string): Promise<void>;
}

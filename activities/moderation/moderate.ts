// A provider guardrail's moderation call: resolves the provider for the project (providers/
// moderation/resolve.ts), sends the text, and turns provider errors into ApplicationFailures
// whose type says whether a retry can help and whose message is caller-safe (the provider's own
// text goes to the worker's log). The text is not logged.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ModerationAnswer } from '../../abl/runtime/contract';
import { ProviderError } from '../../providers/llm/errors';
import { providerErrorLogFields, publicProviderMessage } from '../../providers/llm/public-error';
import type { ResolveModeration } from '../../providers/moderation/resolve';

export interface ModerateInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  agent: string;
  guardrail: string;
  provider: 'openai' | 'local';
  text: string;
}

type FailureLog = { warn(fields: Record<string, unknown>, message: string): void };

export function createModerate(deps: { resolveModeration: ResolveModeration; logger?: FailureLog }) {
  return async function moderate(input: ModerateInput): Promise<ModerationAnswer> {
    const resolved = await deps.resolveModeration({ tenantId: input.tenantId, projectId: input.projectId, provider: input.provider });
    if (!resolved.ok) throw ApplicationFailure.nonRetryable(`Moderation not configured: ${resolved.reason}`, 'MODERATION_UNAVAILABLE');
    try {
      const [result] = await resolved.moderator.moderate([input.text], { signal: Context.current().cancellationSignal });
      if (!result) throw ApplicationFailure.nonRetryable('The moderation provider returned no result', 'MODERATION_BAD_RESPONSE');
      return { provider: resolved.moderator.name, model: result.model, flagged: result.flagged, scores: result.scores, flaggedCategories: result.flaggedCategories };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      deps.logger?.warn(
        { sessionId: input.sessionId, agent: input.agent, guardrail: input.guardrail, activityId: Context.current().info.activityId, ...providerErrorLogFields(err) },
        'moderation call failed',
      );
      throw ApplicationFailure.create({
        message: publicProviderMessage(err, 'moderation provider'),
        type: `MODERATION_${err.kind.toUpperCase()}`,
        nonRetryable: !err.retryable,
        nextRetryDelay: err.retryAfterMs,
      });
    }
  };
}

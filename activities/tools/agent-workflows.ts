// Activities of `type: workflow` tools (workflows/agent-workflows.ts): the version a session's
// deployment pins for a workflow, and the POST of the shipped `deliver_webhook` workflow.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Json } from '../../abl/ir';
import type { Config } from '../../lib/config';
import type { Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { BlockedDestinationError, destinationGuard, toolDestinationPolicy } from '../../lib/net/destination';

export interface AgentWorkflowDeps {
  config: Pick<Config, 'TOOL_ALLOW_PRIVATE_NETWORKS' | 'TOOL_ALLOWED_PRIVATE_DESTINATIONS'>;
  models: Pick<Models, 'Deployment'>;
}

/** Answers that are worth another attempt: timeouts, rate limits and server errors. */
const RETRYABLE = (status: number) => status === 408 || status === 429 || status >= 500;

export function createAgentWorkflowActivities(deps: AgentWorkflowDeps) {
  return {
    /**
     * The version label the session's deployment gives `workflowId` in its workflowVersionManifest,
     * or null (no deployment, no manifest, no entry: the registry's latest). Tenant-scoped.
     */
    async agentWorkflowVersion(query: { tenantId: string; projectId: string; deploymentId: string | null; workflowId: string }): Promise<string | null> {
      if (!query.deploymentId) return null;
      const deployment = await findOwned(deps.models.Deployment, query.deploymentId, { tenantId: query.tenantId, projectId: query.projectId });
      const manifest = deployment?.workflowVersionManifest ?? null;
      const label = manifest && Object.hasOwn(manifest, query.workflowId) ? manifest[query.workflowId] : undefined;
      return typeof label === 'string' ? label : null;
    },

    /** One delivery attempt of `deliver_webhook`: Temporal retries it (RETRYABLE answers and network errors). */
    async deliverAgentWebhook(input: { tenantId: string; projectId: string; sessionId: string; url: string; payload: Json }): Promise<{ delivered: true; status: number; attempts: number }> {
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw ApplicationFailure.nonRetryable(`Not a URL: ${input.url.slice(0, 200)}`, 'BAD_INPUT');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw ApplicationFailure.nonRetryable('deliver_webhook sends to http(s) URLs only', 'BAD_INPUT');
      const guard = destinationGuard(toolDestinationPolicy(deps.config));
      const attempt = Context.current().info.attempt;
      let res: Response;
      try {
        res = await guard.fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-switchboard-session': input.sessionId },
          body: JSON.stringify(input.payload ?? null),
          signal: AbortSignal.any([Context.current().cancellationSignal, AbortSignal.timeout(20_000)]),
          redirect: 'manual',
        });
      } catch (err) {
        const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
        // A refused destination (SSRF rules) will be refused again: no retry.
        if (cause instanceof BlockedDestinationError) throw ApplicationFailure.nonRetryable(cause.message, 'WEBHOOK_REFUSED');
        throw ApplicationFailure.retryable(`Delivery failed: ${cause instanceof Error ? cause.message : String(cause)}`, 'WEBHOOK_UNREACHABLE');
      }
      await res.body?.cancel().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return { delivered: true, status: res.status, attempts: attempt };
      if (RETRYABLE(res.status)) throw ApplicationFailure.retryable(`The endpoint answered ${res.status}`, 'WEBHOOK_RETRY');
      throw ApplicationFailure.nonRetryable(`The endpoint answered ${res.status}`, 'WEBHOOK_REFUSED');
    },
  };
}

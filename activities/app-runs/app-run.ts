// The activities of an async agentic-app run (workflows/app-run.ts): the turn, sent to the
// session's AgentSession workflow through a Temporal client, and the signed delivery of the
// result to the caller's callback URL under the rules of HTTP-async receivers: every connection
// to an address the guard's own resolution checked (APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS
// exempts a receiver; there is no blanket opt-out), and redirects never followed.
import { timeTurn } from '../../core/metrics/turns';
import { computeSignature } from '../../lib/http-async/signing';
import { ApplicationFailure } from '@temporalio/activity';
import { APP_RUN_CALLBACK_TOKEN_PURPOSE, type AppRunDoc, finishAppRun, markAppRunStarted } from '../../db/app-run';
import { appSessionStatus, type AppSessionDoc } from '../../db/app-session';
import { isErrorCode } from '../../lib/error-codes';
import { appRunCallbackDestinationPolicy, destinationGuard } from '../../lib/net/destination';
import { postCallback } from '../../lib/http-async/callback-post';
import { turnUpdate, type AppRunInput, type TurnUpdateInput } from '../../workflows/definitions';
import type { ActivityDeps } from '../index';


export { APP_RUN_CALLBACK_TOKEN_PURPOSE };

/** The result body a callback receives, the same bytes on every attempt. */
export function appRunCallbackBody(run: AppRunDoc, session: AppSessionDoc | null): string {
  return JSON.stringify({
    messageId: run.messageId,
    runId: run._id,
    status: run.status,
    output: run.output,
    ...(run.error ? { error: run.error } : {}),
    sessionInfo: {
      status: session ? appSessionStatus(session) : 'terminated',
      runId: run._id,
      appId: run.projectId,
      sessionId: `s-${run.sessionId}`,
      sessionReference: session?.sessionReference ?? null,
      userReference: session?.userReference ?? null,
      userId: session?.userId ?? null,
    },
  });
}

function failureOf(err: unknown): { code: string; message: string } | null {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const failure = e as { name?: string; type?: unknown; message?: string };
    if (failure.name === 'ApplicationFailure') {
      return isErrorCode(failure.type) ? { code: failure.type, message: failure.message ?? 'The run failed' } : { code: 'INTERNAL_ERROR', message: 'The run failed' };
    }
    if (failure.name === 'WorkflowNotFoundError') return { code: 'CONFLICT', message: 'Session has ended; start a new session' };
  }
  return null;
}

export function createAppRunActivities(deps: ActivityDeps) {
  const readRun = async (input: AppRunInput): Promise<AppRunDoc> => {
    const run = await deps.models.AppRun.findOne({ _id: input.runId, tenantId: input.tenantId, projectId: input.projectId }).lean();
    if (!run) throw ApplicationFailure.nonRetryable(`Run ${input.runId} not found`, 'NOT_FOUND');
    return run;
  };

  return {
    /** Runs the turn once (update id = run id) and records the outcome on the run and its session. */
    async executeAppRunTurn(input: AppRunInput): Promise<{ status: 'success' | 'failed'; hasCallback: boolean }> {
      const run = await readRun(input);
      const hasCallback = run.callbackUrl !== null;
      if (run.status === 'success' || run.status === 'failed') return { status: run.status, hasCallback };
      const client = deps.temporalClient;
      if (!client) throw ApplicationFailure.nonRetryable('This worker has no Temporal client for app runs', 'SERVICE_UNAVAILABLE');
      await markAppRunStarted(deps.models, run);
      const turn: TurnUpdateInput = { clientMessageId: run._id, retryable: true, message: run.message, ...(run.metadataJson ? { metadata: JSON.parse(run.metadataJson) as Record<string, unknown> } : {}) };
      try {
        const result = await timeTurn('app_run', () => client.workflow.getHandle(`session/${run.sessionId}`).executeUpdate(turnUpdate, { args: [turn], updateId: run._id }));
        await finishAppRun(deps.models, run, { ok: true, output: [{ type: 'text', content: result.response }], spanIds: result.traceEvents.map((e) => e.spanId) });
        return { status: 'success', hasCallback };
      } catch (err) {
        const failure = failureOf(err);
        // Temporal not answering: the activity is retried, and the same update id runs the turn once.
        if (!failure) throw err;
        await finishAppRun(deps.models, run, { ok: false, error: failure });
        return { status: 'failed', hasCallback };
      }
    },

    /** POSTs the run's result, signed; a non-2xx answer or a network error is retried by Temporal. */
    async deliverAppRunCallback(input: AppRunInput): Promise<void> {
      const run = await readRun(input);
      if (!run.callbackUrl || !run.callbackToken || run.deliveredAt) return;
      if (!deps.encryptor) throw ApplicationFailure.nonRetryable('no master key (ENCRYPTION_KEYS or ENCRYPTION_KEY) is configured', 'SERVICE_UNAVAILABLE');
      const token = deps.encryptor.decrypt(run.tenantId, APP_RUN_CALLBACK_TOKEN_PURPOSE, run.callbackToken);
      const session = await deps.models.AppSession.findOne({ _id: run.sessionId, tenantId: run.tenantId }).lean();
      const body = appRunCallbackBody(run, session);
      const timestamp = String(Math.floor(Date.now() / 1000));
      await deps.models.AppRun.updateOne({ _id: run._id, tenantId: run.tenantId }, { $inc: { deliveryAttempts: 1 } });
      const outcome = await postCallback({
        url: run.callbackUrl,
        headers: {
          'content-type': 'application/json',
          'x-abl-timestamp': timestamp,
          // The platform's one callback signature: sha256=<hex> of HMAC-SHA256(callbackToken, `<timestamp>.<rawBody>`).
          'x-abl-signature': computeSignature(token, timestamp, body),
          'x-abl-run-id': run._id,
        },
        rawBody: body,
        fetch: destinationGuard(appRunCallbackDestinationPolicy(deps.config)).fetch,
        timeoutMs: 20_000,
      });
      if (outcome.blocked) throw ApplicationFailure.nonRetryable(outcome.error ?? 'The callback destination is not allowed', 'DESTINATION_BLOCKED');
      // A redirect is final: it is never followed, and the same URL would answer it again.
      if (outcome.statusCode !== null && outcome.statusCode >= 300 && outcome.statusCode < 400) {
        throw ApplicationFailure.nonRetryable(`Callback ${outcome.error}`, 'CALLBACK_REDIRECT');
      }
      if (!outcome.ok) throw ApplicationFailure.retryable(`Callback delivery failed: ${outcome.error}`, 'CALLBACK_DELIVERY_FAILED');
      await deps.models.AppRun.updateOne({ _id: run._id, tenantId: run.tenantId }, { $set: { deliveredAt: new Date() } });
    },
  };
}

// AppRun: one async run of an agentic-app session. The turn goes to the session's AgentSession
// workflow as a `turn` update sent by an activity (update id = run id, so a retried activity
// runs the turn once), then the result is POSTed to the caller's callback URL by another
// activity, retried with exponential backoff until the receiver answers 2xx.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AppRunInput, AppRunResult } from './definitions';

const { executeAppRunTurn } = wf.proxyActivities<Activities>({
  // A turn can call models and tools; the session's own timeouts bound it well inside this.
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/** The delivery schedule (docs/agentic-app-sessions.md): 1 s, 2 s, 4 s … capped at 60 s, 8 attempts. */
const { deliverAppRunCallback } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '60 seconds', maximumAttempts: 8, nonRetryableErrorTypes: ['DESTINATION_BLOCKED', 'NOT_FOUND'] },
});

export async function appRun(input: AppRunInput): Promise<AppRunResult> {
  const { status, hasCallback } = await executeAppRunTurn(input);
  if (!hasCallback) return { status, delivered: false };
  try {
    await deliverAppRunCallback(input);
    return { status, delivered: true };
  } catch {
    // Every attempt failed: the run keeps its result (…/runs/{runId}/status) and its attempts.
    return { status, delivered: false };
  }
}

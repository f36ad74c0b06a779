// DeploymentDrain: after a deployment is retired, ends the sessions still on it. A session is
// ended once it has had no message for `idleMs`, and every one left at `drainTimeoutMs`; the end
// signal lets a turn in progress finish first. Started by the API before it marks the deployment
// retired, so it waits a little for that write and stops if the deployment is active again.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import { DEPLOYMENT_RETIRED_REASON, endSignal, type DeploymentDrainInput, type DeploymentDrainResult, type DeploymentDrainWorkflow } from './definitions';

const { viewDeploymentDrain } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** How long the drain waits for the API to mark the deployment retired before it gives up. */
const ARMING_ROUNDS = 3;

export async function deploymentDrain(input: DeploymentDrainInput): Promise<DeploymentDrainResult> {
  const startedMs = Date.now();
  const signalled = new Set<string>();
  let seenRetired = false;
  for (let round = 0; ; round++) {
    const view = await viewDeploymentDrain({ tenantId: input.tenantId, projectId: input.projectId, deploymentId: input.deploymentId });
    const retired = view.status === 'retired' && view.retireReason === 'retired';
    if (!retired) {
      if (seenRetired) return { outcome: 'reactivated', endedSessions: signalled.size };
      if (view.status === 'missing' || round >= ARMING_ROUNDS) return { outcome: 'not_retired', endedSessions: signalled.size };
    } else {
      seenRetired = true;
      const pending = view.sessions.filter((s) => !signalled.has(s.id));
      if (view.sessions.length === 0) return { outcome: 'drained', endedSessions: signalled.size };
      const timedOut = Date.now() - startedMs >= input.drainTimeoutMs;
      const due = pending.filter((s) => timedOut || Date.now() - s.lastActivityMs >= input.idleMs);
      await Promise.all(
        due.map(async (s) => {
          signalled.add(s.id);
          try {
            await wf.getExternalWorkflowHandle(`session/${s.id}`).signal(endSignal, { reason: DEPLOYMENT_RETIRED_REASON });
          } catch {
            // Its workflow has already closed: the session record catches up on its own.
          }
        }),
      );
      // At the timeout every session left has been told to end; they finish on their own.
      if (timedOut && pending.length === due.length) return { outcome: 'timed_out', endedSessions: signalled.size };
    }
    await wf.sleep(input.pollMs);
  }
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof deploymentDrain, DeploymentDrainWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

// RetentionSweep: enforces every project's retention (core/lifecycle/retention.ts), one activity
// per project, at one clock fixed when the sweep starts. Started by the `data-retention` schedule
// (core/lifecycle/workflows.ts) or on demand; its result says what it deleted, per project and kind.
// Continues as new when its history grows, carrying where it was and what it did.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RetentionSweepInput, RetentionSweepResult, RetentionSweepWorkflow } from './definitions';

const { listRetentionPage, enforceProjectRetention } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

const PAGE = 100;
/** Projects the result lists by name; `projects` and the totals count them all. */
export const RETENTION_SWEEP_LISTED = 200;

export async function retentionSweep(input: RetentionSweepInput): Promise<RetentionSweepResult> {
  const nowMs = input.nowMs ?? Date.now();
  const startedMs = Date.now();
  const result: RetentionSweepResult = input.carried ?? { projects: 0, deleted: { transcripts: 0, traces: 0, analytics: 0 }, byProject: [] };
  let after = input.after ?? null;
  for (;;) {
    const page = await listRetentionPage({ after, limit: PAGE });
    for (const project of page) {
      const outcome = await enforceProjectRetention({ ...project, nowMs, startedMs });
      result.projects++;
      for (const kind of ['transcripts', 'traces', 'analytics'] as const) result.deleted[kind] += outcome.deleted[kind];
      const any = outcome.deleted.transcripts + outcome.deleted.traces + outcome.deleted.analytics > 0;
      if (any && result.byProject.length < RETENTION_SWEEP_LISTED) result.byProject.push(outcome);
      after = project.projectId;
    }
    if (page.length < PAGE) return result;
    if (wf.workflowInfo().continueAsNewSuggested) await wf.continueAsNew<RetentionSweepWorkflow>({ nowMs, after, carried: result });
  }
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof retentionSweep, RetentionSweepWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

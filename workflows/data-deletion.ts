// DataDeletion: deletes a project or a whole tenant durably. It ends the scope's running workflows,
// deletes every collection's documents of the scope in batches (core/lifecycle/cascade.ts), ends
// and deletes again if anything started meanwhile, then removes the record and completes the
// deletion record the caller polls. Every step is idempotent: a worker crash resumes it.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DataDeletionInput, DataDeletionResult, DataDeletionWorkflow } from './definitions';

const { endScopeWorkflows, deleteScopeData, finishDataDeletion } = wf.proxyActivities<Activities>({
  // Long steps that heartbeat after each batch: a worker that dies is noticed within the heartbeat timeout.
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** Rounds of end-then-delete after the first, for work that started while the first ran. */
const CATCH_UP_ROUNDS = 3;

export async function dataDeletion(input: DataDeletionInput): Promise<DataDeletionResult> {
  let workflowsEnded = await endScopeWorkflows(input);
  const deleted: Record<string, number> = {};
  const add = (counts: Record<string, number>) => {
    for (const [name, n] of Object.entries(counts)) deleted[name] = (deleted[name] ?? 0) + n;
  };
  add(await deleteScopeData(input));
  for (let round = 0; round < CATCH_UP_ROUNDS; round++) {
    const late = await endScopeWorkflows(input);
    if (late === 0) break;
    workflowsEnded += late;
    add(await deleteScopeData(input));
  }
  const result: DataDeletionResult = { deletionId: input.deletionId, workflowsEnded, deleted };
  await finishDataDeletion({ ...result, tenantId: input.tenantId, projectId: input.projectId });
  return result;
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof dataDeletion, DataDeletionWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

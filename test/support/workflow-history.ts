// A live session's workflow history in tests (its session bundle inlined): the patch ids it
// recorded, and a replay of it with today's workflow bundle (a nondeterminism error fails the test).
import { Worker } from '@temporalio/worker';
import { type TestStack } from './stack';
import { createSessionBundleStore } from '../../activities/persistence/session-bundles';
import { inlineSessionBundles } from '../../workers/session-bundle-storage';

type History = Awaited<ReturnType<ReturnType<Awaited<ReturnType<TestStack['ctx']['temporal']['client']>>['workflow']['getHandle']>['fetchHistory']>>;

/**
 * The session's history as a worker sees it: its bundle reference replaced by the bundle, read
 * back from MongoDB by hash (workers/session-bundle-storage.ts), so it replays without a database.
 */
export async function sessionHistory(stack: TestStack, sessionId: string): Promise<History> {
  const history = await (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`).fetchHistory();
  return inlineSessionBundles(history, createSessionBundleStore({ models: stack.ctx.models, cacheSize: 4 }));
}

/** Patch ids recorded in a history (markers named core_patch carry `{ id, deprecated }`). */
export function patchIdsIn(history: History): string[] {
  return (history.events ?? [])
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .flatMap((e) => Object.values(e.markerRecordedEventAttributes?.details ?? {}))
    .map((d) => (JSON.parse(Buffer.from(d.payloads![0]!.data!).toString('utf8')) as { id: string }).id);
}

export async function replayWithTodaysCode(history: History, workflowId: string): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.SB_TEST_WORKFLOW_BUNDLE! }, replayName: workflowId }, history, workflowId);
}

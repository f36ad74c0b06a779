// A live session's workflow history in tests: the patch ids it recorded, and a replay of it with
// today's workflow bundle (a nondeterminism error fails the test).
import { Worker } from '@temporalio/worker';
import { type TestStack } from './stack';
import { decodeEncryptedPayloads } from '../fixtures/histories/history-json';

type History = Awaited<ReturnType<ReturnType<Awaited<ReturnType<TestStack['ctx']['temporal']['client']>>['workflow']['getHandle']>['fetchHistory']>>;

/** The history as Temporal stores it: payloads encrypted by the codec when one is configured. */
export async function rawSessionHistory(stack: TestStack, sessionId: string, runId?: string): Promise<History> {
  return (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`, runId).fetchHistory();
}

/** The history with its payloads decoded, as workflow code and an operator with the codec see it. */
export async function sessionHistory(stack: TestStack, sessionId: string, runId?: string): Promise<History> {
  return decodeEncryptedPayloads(await rawSessionHistory(stack, sessionId, runId), stack.ctx.payloadCodec);
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

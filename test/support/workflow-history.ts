// A live session's workflow history in tests: as Temporal stores it (encrypted, its session bundle
// a reference), as a worker sees it (decoded, the bundle inlined), the patch ids it recorded, and a
// replay of it with today's workflow bundle (a nondeterminism error fails the test).
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { type TestStack } from './stack';
import { decodeEncryptedPayloads } from '../fixtures/histories/history-json';
import { createSessionBundleStore } from '../../activities/persistence/session-bundles';
import { inlineSessionBundles } from '../../workers/session-bundle-storage';
import { workerTracing } from '../../workers/tracing';

type History = Awaited<ReturnType<ReturnType<Awaited<ReturnType<TestStack['ctx']['temporal']['client']>>['workflow']['getHandle']>['fetchHistory']>>;

/** The history as Temporal stores it: payloads encrypted by the codec when one is configured. */
export async function rawSessionHistory(stack: TestStack, sessionId: string, runId?: string): Promise<History> {
  return (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`, runId).fetchHistory();
}

/**
 * The history as workflow code sees it: payloads decoded, and the session bundle's reference
 * replaced by the bundle, read back from MongoDB by hash (workers/session-bundle-storage.ts), so it
 * replays without a database.
 */
export async function sessionHistory(stack: TestStack, sessionId: string, runId?: string): Promise<History> {
  const decoded = await decodeEncryptedPayloads(await rawSessionHistory(stack, sessionId, runId), stack.ctx.payloadCodec);
  return inlineSessionBundles(decoded, createSessionBundleStore({ models: stack.ctx.models, cacheSize: 4 }));
}

/**
 * A workflow's history as anyone with access to Temporal reads it (the Web UI, `temporal workflow
 * show`): through a client with the default data converter, so nothing is decoded.
 */
export async function storedHistory(stack: TestStack, workflowId: string, runId?: string): Promise<History> {
  const connection = await Connection.connect({ address: stack.config.TEMPORAL_ADDRESS });
  try {
    return await new Client({ connection, namespace: stack.config.TEMPORAL_NAMESPACE }).workflow.getHandle(workflowId, runId).fetchHistory();
  } finally {
    await connection.close();
  }
}

/** Every byte string of a history (payload data and metadata) and its other fields, to search for a secret. */
export function historyBytes(history: unknown): Buffer {
  const parts: Buffer[] = [];
  const visit = (node: unknown) => {
    if (node instanceof Uint8Array) parts.push(Buffer.from(node));
    else if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') Object.values(node).forEach(visit);
    else if (node !== null && node !== undefined) parts.push(Buffer.from(String(node)));
  };
  visit(history);
  return Buffer.concat(parts);
}

/** Every payload of a history (the bytes of its data and metadata) as text, joined by newlines, to search for what a session recorded. */
export function payloadText(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(payloadText).join('\n');
  if (value && typeof value === 'object') return Object.values(value).map(payloadText).join('\n');
  return '';
}

/** Patch ids recorded in a history (markers named core_patch carry `{ id, deprecated }`). */
export function patchIdsIn(history: History): string[] {
  return (history.events ?? [])
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .flatMap((e) => Object.values(e.markerRecordedEventAttributes?.details ?? {}))
    .map((d) => (JSON.parse(Buffer.from(d.payloads![0]!.data!).toString('utf8')) as { id: string }).id);
}

export async function replayWithTodaysCode(history: History, workflowId: string): Promise<void> {
  // With the sinks a worker has: a traced run's spans are made again in replay (and dropped).
  await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.SB_TEST_WORKFLOW_BUNDLE! }, replayName: workflowId, sinks: workerTracing(null).sinks }, history, workflowId);
}

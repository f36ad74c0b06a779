// Replay compatibility: histories of real AgentSession (and Delegation) runs recorded by older
// workflow code (test/fixtures/histories, see its README) must replay with the current workflow
// bundle without a nondeterminism error. Workflows still running when a worker is upgraded are
// replayed exactly like this, so a change that breaks it would fail those sessions in production.
// Needs no server: the replay worker runs the bundle that global-setup built from this tree.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DefaultLogger, Runtime, Worker, type ReplayResult } from '@temporalio/worker';
import { historyFromJsonObject } from '../fixtures/histories/history-json';

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');

interface Fixture {
  file: string;
  label: string;
  scenario: string;
  commit: string;
  /** Recorded with `--only`: some scenarios of that code, not all. */
  partial?: boolean;
  workflowId: string;
  history: { events: Array<Record<string, unknown>> };
}

function loadFixtures(): Fixture[] {
  return readdirSync(DIR)
    .filter((f) => /\.json(\.gz)?$/.test(f))
    .sort()
    .map((file) => {
      const raw = readFileSync(path.join(DIR, file));
      return { file, ...(JSON.parse((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as Omit<Fixture, 'file'>) };
    });
}

/** Patch ids recorded in a history (markers named core_patch carry `{ id, deprecated }`). */
function patchIds(fixture: Pick<Fixture, 'history'>): string[] {
  return fixture.history.events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes as { markerName?: string; details?: Record<string, { payloads: { data: string }[] }> } | undefined;
    if (marker?.markerName !== 'core_patch') return [];
    return Object.values(marker.details ?? {}).map((d) => (JSON.parse(Buffer.from(d.payloads[0]!.data, 'base64').toString('utf8')) as { id: string }).id);
  });
}

async function replayAll(fixtures: Pick<Fixture, 'history' | 'workflowId'>[]): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  const histories = fixtures.map((f) => ({ workflowId: f.workflowId, history: historyFromJsonObject(f.history) }));
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: process.env.SB_TEST_WORKFLOW_BUNDLE! }, replayName: 'replay-test' }, histories)) {
    results.push(result);
  }
  return results;
}

const describeError = (result: ReplayResult | undefined) => (result?.error ? `${result.error.name}: ${result.error.message}` : null);

const fixtures = loadFixtures();
let results: ReplayResult[];

beforeAll(async () => {
  try {
    // The last test provokes a nondeterminism error on purpose; core would log it as a warning.
    Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [], telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // Already installed in this module registry.
  }
  results = await replayAll(fixtures);
});

it('has histories from before and after each patch of the session workflow', () => {
  const sessions = fixtures.filter((f) => f.workflowId.split('/').length === 2);
  // Recorded before idle-watchdog-v1 (the per-turn idle timer) and after it.
  expect(sessions.some((f) => patchIds(f).includes('local-activities-v1') && !patchIds(f).includes('idle-watchdog-v1'))).toBe(true);
  expect(sessions.some((f) => patchIds(f).includes('idle-watchdog-v1'))).toBe(true);
  // Before deferred-projection-v1 (projection written in the turn) and after it (held, flushed).
  expect(sessions.some((f) => patchIds(f).includes('idle-watchdog-v1') && !patchIds(f).includes('deferred-projection-v1'))).toBe(true);
  expect(sessions.some((f) => patchIds(f).includes('deferred-projection-v1'))).toBe(true);
  // An answer with two tool calls: sequential before parallel-tool-calls-v1, concurrent after.
  const multiTool = sessions.filter((f) => f.scenario === 'parallel-tools');
  expect(multiTool.some((f) => !patchIds(f).includes('parallel-tool-calls-v1'))).toBe(true);
  expect(multiTool.some((f) => patchIds(f).includes('parallel-tool-calls-v1'))).toBe(true);
  // Before rule-checkpoints-v1 (tool/handoff guardrails off) and after it, sessions and children.
  expect(sessions.some((f) => patchIds(f).includes('deferred-projection-v1') && !patchIds(f).includes('rule-checkpoints-v1'))).toBe(true);
  expect(sessions.some((f) => patchIds(f).includes('rule-checkpoints-v1'))).toBe(true);
  expect(fixtures.some((f) => f.scenario === 'delegation-child' && patchIds(f).includes('rule-checkpoints-v1'))).toBe(true);
  // Before and after digressions-v1, agent-hooks-v1 and gather-llm-v1 (asked together, sessions and children).
  for (const patch of ['digressions-v1', 'agent-hooks-v1', 'gather-llm-v1']) {
    expect(sessions.some((f) => patchIds(f).includes('rule-checkpoints-v1') && !patchIds(f).includes(patch))).toBe(true);
    expect(sessions.some((f) => patchIds(f).includes(patch))).toBe(true);
    expect(fixtures.some((f) => f.scenario === 'delegation-child' && patchIds(f).includes(patch))).toBe(true);
  }
  // The runtime-gaps scenario: a mixed answer, a workflow tool, __fan_out__ to a WHEN entry and the
  // end hook in the session; after_agent of the failed delegated child in the child.
  const gaps = fixtures.find((f) => f.scenario === 'runtime-gaps');
  for (const patch of ['mixed-parallel-tools-v1', 'workflow-tools-v1', 'fan-out-when-v1', 'session-end-hooks-v1']) expect(patchIds(gaps!)).toContain(patch);
  expect(patchIds(fixtures.find((f) => f.scenario === 'runtime-gaps-child')!)).toContain('failure-hooks-v1');
  // Every scenario of the recording script, from every commit recorded in full.
  for (const label of new Set(fixtures.filter((f) => !f.partial).map((f) => f.label))) {
    expect(fixtures.filter((f) => f.label === label).map((f) => f.scenario).sort()).toEqual(
      expect.arrayContaining(['continue-as-new-first-run', 'idle-timeout', 'reset', 'turns-handoff-tool']),
    );
  }
  expect(results).toHaveLength(fixtures.length);
});

it.each(fixtures.map((f, i) => [f.file, i] as const))('replays %s with the current workflow code', (_file, i) => {
  expect(describeError(results[i])).toBeNull();
  expect(results[i]!.workflowId).toBe(fixtures[i]!.workflowId);
});

it('fails a history the current code cannot have produced (the harness sees nondeterminism)', async () => {
  // A run recorded after idle-watchdog-v1, with its marker renamed: the current code takes the
  // per-turn-timer path for it and must be caught diverging from the recorded commands.
  const source = fixtures.find((f) => f.scenario === 'turns-handoff-tool' && patchIds(f).includes('idle-watchdog-v1'))!;
  const renamed = JSON.parse(
    JSON.stringify(source.history).replaceAll(
      Buffer.from(JSON.stringify({ id: 'idle-watchdog-v1', deprecated: false })).toString('base64'),
      Buffer.from(JSON.stringify({ id: 'idle-watchdog-v0', deprecated: false })).toString('base64'),
    ),
  ) as Fixture['history'];
  expect(patchIds({ history: renamed })).toContain('idle-watchdog-v0');
  const [result] = await replayAll([{ workflowId: source.workflowId, history: renamed }]);
  expect(describeError(result)).toMatch(/nondetermin/i);
});

it.each(['mixed-parallel-tools-v1', 'workflow-tools-v1', 'session-end-hooks-v1'])('fails the runtime-gaps session replayed as if recorded before %s', async (patch) => {
  // Without the marker the current code takes the old path (calls one after another, a workflow
  // tool that fails at once, no end hook) and must be caught diverging from the recorded commands.
  const source = fixtures.find((f) => f.scenario === 'runtime-gaps')!;
  const renamed = JSON.parse(
    JSON.stringify(source.history).replaceAll(
      Buffer.from(JSON.stringify({ id: patch, deprecated: false })).toString('base64'),
      Buffer.from(JSON.stringify({ id: patch.replace(/-v1$/, '-v0'), deprecated: false })).toString('base64'),
    ),
  ) as Fixture['history'];
  expect(patchIds({ history: renamed })).toContain(patch.replace(/-v1$/, '-v0'));
  const [result] = await replayAll([{ workflowId: source.workflowId, history: renamed }]);
  expect(describeError(result)).toMatch(/nondetermin/i);
});

it('fails the concurrent tool calls of a run replayed as if recorded before parallel-tool-calls-v1', async () => {
  // Without its marker the current code calls the tools one after another and must be caught
  // diverging from the two activities the run scheduled together.
  const source = fixtures.find((f) => f.scenario === 'parallel-tools' && patchIds(f).includes('parallel-tool-calls-v1'))!;
  const renamed = JSON.parse(
    JSON.stringify(source.history).replaceAll(
      Buffer.from(JSON.stringify({ id: 'parallel-tool-calls-v1', deprecated: false })).toString('base64'),
      Buffer.from(JSON.stringify({ id: 'parallel-tool-calls-v0', deprecated: false })).toString('base64'),
    ),
  ) as Fixture['history'];
  expect(patchIds({ history: renamed })).toContain('parallel-tool-calls-v0');
  const [result] = await replayAll([{ workflowId: source.workflowId, history: renamed }]);
  expect(describeError(result)).toMatch(/nondetermin/i);
});

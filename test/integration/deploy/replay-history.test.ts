// `npm run admin -- replay-history` replays a live session's history (fetched from Temporal,
// payloads encrypted, its session bundle a reference in MongoDB) with today's workflow code, saves
// it for replaying elsewhere, and reports a history the code cannot have produced, exit code 1.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestStack, seedTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { adminInProcess } from '../../support/admin-cli';
import { childEnv } from '../../support/worker-process';

jest.setTimeout(120_000);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-replay-cli-'));
let stack: TestStack;
let sessionId: string;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  const t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, t, 'Greeter', `AGENT: Greeter
GOAL: "Greet."
FLOW:
  steps: [greet]
  greet:
    REASONING: false
    RESPOND: "Hello, replayed."
`);
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Greeter', message: 'hi' } });
  expect(res.status).toBe(200);
  sessionId = res.body.sessionId;
});
afterAll(async () => {
  await stack?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const admin = (...args: string[]) => adminInProcess(childEnv(stack.config) as Record<string, string>, ...args, '--bundle', process.env.SB_TEST_WORKFLOW_BUNDLE!);

it('replays a live session with the current code and saves its history', async () => {
  const saved = path.join(tmp, 'session.json');
  const result = await admin('replay-history', '--workflow-id', `session/${sessionId}`, '--save', saved);
  expect(result).toMatchObject({ status: 0, err: '' });
  expect(JSON.parse(result.out)).toMatchObject({ workflowId: `session/${sessionId}`, replayed: true });
  expect(JSON.parse(result.out).events).toBeGreaterThan(3);
  // Saved as stored: the reply is encrypted in it.
  expect(readFileSync(saved, 'utf8')).not.toContain(Buffer.from('Hello, replayed.').toString('base64'));
});

it('reports a history the current code cannot have produced, with exit code 1', async () => {
  const saved = path.join(tmp, 'tampered.json');
  await admin('replay-history', '--workflow-id', `session/${sessionId}`, '--save', saved);
  // Its idle-watchdog-v1 marker renamed (as replay.test.ts does with the fixtures): the current
  // code takes the per-turn-timer path for it and diverges from the recorded commands.
  const marker = (id: string) => Buffer.from(JSON.stringify({ id, deprecated: false })).toString('base64');
  const text = readFileSync(saved, 'utf8');
  expect(text).toContain(marker('idle-watchdog-v1'));
  writeFileSync(saved, text.replaceAll(marker('idle-watchdog-v1'), marker('idle-watchdog-v0')));
  const result = await admin('replay-history', '--history', saved);
  expect(result.status).toBe(1);
  const report = JSON.parse(result.out);
  expect(report.replayed).toBe(false);
  expect(report.error).toMatch(/nondetermin/i);
});

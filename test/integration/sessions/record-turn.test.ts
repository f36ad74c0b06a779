// The projection write of a turn (activities/persistence/record-turn.ts) finds the session summary
// by its id together with the tenant and project it was given: ids of another tenant or another
// project change nothing. Its numbered rows are written once per number, and a later attempt of
// the workflow task (a larger history length) replaces what an abandoned attempt wrote.
import { createRecordTurn, type RecordTurnInput } from '../../../activities/persistence/record-turn';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from './fixtures';

let stack: TestStack;
let acme: SeededTenant;
let globex: SeededTenant;
beforeAll(async () => {
  stack = await startTestStack();
  acme = await seedTenant(stack.ctx, 'acme-record-turn');
  globex = await seedTenant(stack.ctx, 'globex-record-turn');
});
afterAll(() => stack.close());

const write = (input: Pick<RecordTurnInput, 'tenantId' | 'projectId' | 'sessionId'>) =>
  createRecordTurn({ models: stack.ctx.models })({
    ...input,
    turn: 1,
    messages: [],
    traceEvents: [],
    summary: { messageCount: 7, status: 'ended', lastActivityAt: new Date().toISOString(), endedAt: new Date().toISOString() },
  });

it("leaves a session alone when the write names another tenant or another project", async () => {
  const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
  await write({ tenantId: globex.tenantId, projectId: acme.projectId, sessionId: session._id });
  await write({ tenantId: acme.tenantId, projectId: acme.otherProjectId, sessionId: session._id });
  const unchanged = await stack.ctx.models.Session.findOne({ _id: session._id }).lean();
  expect(unchanged).toMatchObject({ tenantId: acme.tenantId, status: 'active', messageCount: 0, endedAt: null });

  await write({ tenantId: acme.tenantId, projectId: acme.projectId, sessionId: session._id });
  const written = await stack.ctx.models.Session.findOne({ _id: session._id }).lean();
  expect(written).toMatchObject({ status: 'ended', messageCount: 7 });
});

describe('numbered rows', () => {
  const rows = (sessionId: string, historyLength: number | undefined, [user, agent]: [string, string]) =>
    createRecordTurn({ models: stack.ctx.models })({
      tenantId: acme.tenantId,
      projectId: acme.projectId,
      sessionId,
      turn: 7,
      ...(historyLength !== undefined ? { historyLength } : {}),
      messages: [
        { seq: 13, role: 'user', agent: null, content: user, timestamp: new Date().toISOString() },
        { seq: 14, role: 'assistant', agent: 'Desk', content: agent, timestamp: new Date().toISOString() },
      ],
      traceEvents: [{ seq: 40, type: 'response', spanId: 's1', parentSpanId: null, timestamp: new Date().toISOString(), data: { text: agent } }],
      summary: { lastActivityAt: new Date().toISOString() },
    });
  const transcript = async (sessionId: string) =>
    (await stack.ctx.models.TranscriptMessage.find({ tenantId: acme.tenantId, sessionId }).sort({ seq: 1 }).lean()).map((m) => [m.seq, m.content]);
  const traceText = async (sessionId: string) => (await stack.ctx.models.TraceEvent.findOne({ tenantId: acme.tenantId, _id: `${sessionId}:40` }).lean())!.data.text;

  it("replaces the rows of an abandoned attempt with those of the attempt that was recorded, never the other way round", async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    // An attempt whose worker died after its write: the resume it ran is not in the history.
    await rows(session._id, 120, ['(none)', 'Payment done.']);
    // The attempt that was recorded saw a message first and numbered its rows from the same place.
    await rows(session._id, 126, ['600', 'Still waiting for pay.']);
    expect(await transcript(session._id)).toEqual([[13, '600'], [14, 'Still waiting for pay.']]);
    expect(await traceText(session._id)).toBe('Still waiting for pay.');
    // A retry of the recorded write, and a late write of an older attempt, change nothing.
    await rows(session._id, 126, ['600', 'Still waiting for pay.']);
    await rows(session._id, 123, ['(stale)', 'Stale.']);
    expect(await transcript(session._id)).toEqual([[13, '600'], [14, 'Still waiting for pay.']]);
    expect(await traceText(session._id)).toBe('Still waiting for pay.');
  });

  it('replaces rows written before rows carried their history length, and keeps them when the new write carries none', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    await rows(session._id, undefined, ['old', 'Old.']);
    await rows(session._id, undefined, ['again', 'Again.']);
    expect(await transcript(session._id)).toEqual([[13, 'old'], [14, 'Old.']]);
    await rows(session._id, 50, ['new', 'New.']);
    expect(await transcript(session._id)).toEqual([[13, 'new'], [14, 'New.']]);
  });
});

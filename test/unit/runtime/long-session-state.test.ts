// A long conversation's interpreter state stays the same size: the state a session carries into
// each continue-as-new (threads, their bounded histories, variables) does not grow with its turns.
import { loadScenarioProject } from '../../../core/abl-tests/files';
import { platformModelResolver } from '../../../core/abl-tests/models';
import { ScenarioSession } from '../../../core/abl-tests/runner';
import { SAMPLE_PROJECT_DIR } from '../../../infra/seed-project';

it('carries no more state after 400 turns of handoffs and tool calls than after 100', async () => {
  const project = loadScenarioProject(SAMPLE_PROJECT_DIR);
  const session = new ScenarioSession(
    project.compiled,
    {
      name: 'long',
      agent: 'Support_Hub',
      toolMocks: [
        { tool: 'get_invoice', when: { args: { invoice_id: 'INV-999999' } }, error: 'not found' },
        { tool: 'get_invoice', response: { id: 'INV-654321', amount: 840, status: 'paid' } },
      ],
    } as never,
    platformModelResolver({}),
    Date.UTC(2030, 0, 15, 12),
  );
  // The bench's loop (bench/long-session.ts): a handoff to billing, a failed and a good tool call, back to the hub.
  const cycle = ['I have a question about my invoice', 'INV-999999', 'INV-654321', 'no'];
  const sizes: number[] = [];
  let replies: string[] = [];
  for (let turn = 0; turn < 400; turn++) {
    const text = cycle[turn % cycle.length]!;
    replies = turn === 0 ? await session.first(text) : await session.message(text);
    if ((turn + 1) % 100 === 0) sizes.push(JSON.stringify(session.state).length);
  }
  // The loop really ran its tool calls to the end.
  expect(replies.join(' ')).toContain('Anything else?');
  expect(session.events.filter((e) => e.type === 'tool_call').length).toBeGreaterThanOrEqual(200);
  expect(session.state!.threads.length).toBeLessThanOrEqual(2);
  expect(sizes[3]).toBeLessThanOrEqual(sizes[0]! * 1.05);
});

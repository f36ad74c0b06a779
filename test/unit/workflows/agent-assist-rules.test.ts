// The agent-assist lifecycle rules alone: every phase's accepted events, and that a refusal names them.
import { AgentAssistOrderRefused, applyAgentAssistEvent, applyAgentAssistEvents, expectedEvents, initialAgentAssistView } from '../../../workflows/agent-assist-rules';
import type { AgentAssistEvent, AgentAssistTransferType } from '../../../workflows/definitions';

const t = (transferType: AgentAssistTransferType, transition: 'entry' | 'exit', participant: string): AgentAssistEvent => ({ kind: 'transfer', transferType, transition, participant });
const msg: AgentAssistEvent = { kind: 'message', author: 'USER', agentId: 'a', text: 'hi', language: 'en' };
const summary: AgentAssistEvent = { kind: 'summary', language: 'English', locale: 'en', type: 'post' };
const end: AgentAssistEvent = { kind: 'end', reason: 'agent_initiated', participant: 'a1' };

function refusal(events: AgentAssistEvent[]): AgentAssistOrderRefused {
  try {
    applyAgentAssistEvents(initialAgentAssistView(), events);
  } catch (err) {
    if (err instanceof AgentAssistOrderRefused) return err;
    throw err;
  }
  throw new Error('not refused');
}

test('the full order with cold and warm transfers, a summary and the end', () => {
  const view = applyAgentAssistEvents(initialAgentAssistView(), [t('NA', 'entry', 'a1'), msg, t('WARM', 'entry', 'a2'), t('WARM', 'exit', 'a2'), t('COLD', 'exit', 'a1'), msg, t('COLD', 'entry', 'a3'), t('NA', 'exit', 'a3'), summary, end]);
  expect(view).toEqual({ phase: 'ended', activeAgent: null, consultants: [], messages: 2, events: 10, summaryRequested: true });
  expect(expectedEvents(view)).toEqual([]);
});

test.each([
  ['a message first', [msg], 'new'],
  ['a cold entry first', [t('COLD', 'entry', 'a1')], 'new'],
  ['a second NA entry', [t('NA', 'entry', 'a1'), t('NA', 'entry', 'a1')], 'active'],
  ['END before the final exit', [t('NA', 'entry', 'a1'), end], 'active'],
  ['a summary before the final exit', [t('NA', 'entry', 'a1'), summary], 'active'],
  ['a second summary', [t('NA', 'entry', 'a1'), t('NA', 'exit', 'a1'), summary, summary], 'summarized'],
  ['a second END', [t('NA', 'entry', 'a1'), t('NA', 'exit', 'a1'), end, end], 'ended'],
  ['a message after the final exit', [t('NA', 'entry', 'a1'), t('NA', 'exit', 'a1'), msg], 'exited'],
  ['a redial while active', [t('NA', 'entry', 'a1'), t('REDIAL', 'entry', 'a1')], 'active'],
  ['a warm exit of a stranger', [t('NA', 'entry', 'a1'), t('WARM', 'exit', 'a9')], 'active'],
  ['a warm entry of the active agent', [t('NA', 'entry', 'a1'), t('WARM', 'entry', 'a1')], 'active'],
  ['an NA exit while transferring', [t('NA', 'entry', 'a1'), t('COLD', 'exit', 'a1'), t('NA', 'exit', 'a1')], 'transferring'],
])('%s is refused, naming what the phase accepts', (_name, events, phase) => {
  const err = refusal(events);
  expect(err.message).toContain(`phase "${phase}"`);
  for (const e of err.expected) expect(err.message).toContain(e);
});

test('a redial after a drop returns to the same conversation; a refused event changes nothing', () => {
  const exited = applyAgentAssistEvents(initialAgentAssistView(), [t('NA', 'entry', 'a1'), t('NA', 'exit', 'a1')]);
  expect(expectedEvents(exited)).toEqual(['INTERNAL_TRANSFER_EVENT (REDIAL, entry)', 'TRIGGER_SUMMARY_EVENT', 'END_OF_CONVERSATION']);
  const before = JSON.stringify(exited);
  expect(() => applyAgentAssistEvent(exited, msg)).toThrow(AgentAssistOrderRefused);
  expect(JSON.stringify(exited)).toBe(before);
  expect(applyAgentAssistEvent(exited, t('REDIAL', 'entry', 'a1'))).toMatchObject({ phase: 'active', activeAgent: 'a1' });
});

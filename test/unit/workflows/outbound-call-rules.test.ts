// The outbound call's state machine: what each provider status means, and that a call never goes back.
import { movesForward, providerTransition } from '../../../workflows/outbound-call-rules';
import type { OutboundProviderStatusInput } from '../../../workflows/definitions';

const status = (callStatus: string, extra: Partial<OutboundProviderStatusInput> = {}): OutboundProviderStatusInput => ({
  channelConnectionId: 'cc_1',
  callSid: 'CA1',
  callStatus,
  answeredBy: null,
  sipResponseCode: null,
  sequenceNumber: null,
  timestamp: null,
  ingestedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

describe('providerTransition', () => {
  it.each([
    ['initiated', 'dialing', null],
    ['queued', 'dialing', null],
    ['ringing', 'ringing', null],
    ['in-progress', 'in_progress', null],
    ['completed', 'terminal', 'completed'],
    ['busy', 'terminal', 'busy'],
    ['no-answer', 'terminal', 'no_answer'],
    ['failed', 'terminal', 'failed'],
    ['canceled', 'terminal', 'canceled'],
  ])('%s → %s %s', (s, phase, outcome) => {
    expect(providerTransition(status(s), 'off', null)).toMatchObject({ phase, outcome });
  });

  it('a busy with SIP 603 is a rejection', () => {
    expect(providerTransition(status('busy', { sipResponseCode: '603' }), 'off', null)).toMatchObject({ outcome: 'rejected' });
  });

  it('a machine ends `machine` with AMD on (from the callback or seen before), `completed` with it off', () => {
    expect(providerTransition(status('completed', { answeredBy: 'machine_end_beep' }), 'continue', null)).toMatchObject({ outcome: 'machine' });
    expect(providerTransition(status('completed'), 'continue', 'machine_start')).toMatchObject({ outcome: 'machine' });
    expect(providerTransition(status('completed', { answeredBy: 'human' }), 'disconnect', null)).toMatchObject({ outcome: 'completed' });
    expect(providerTransition(status('completed', { answeredBy: 'machine_end_beep' }), 'off', null)).toMatchObject({ outcome: 'completed' });
  });

  it('an unknown status means nothing', () => {
    expect(providerTransition(status('paused'), 'off', null)).toBeNull();
  });
});

describe('movesForward', () => {
  it('only ever forward, and never out of terminal', () => {
    expect(movesForward({ phase: 'accepted' }, 'ringing')).toBe(true);
    expect(movesForward({ phase: 'in_progress' }, 'ringing')).toBe(false);
    expect(movesForward({ phase: 'ringing' }, 'ringing')).toBe(false);
    expect(movesForward({ phase: 'ringing' }, 'terminal')).toBe(true);
    expect(movesForward({ phase: 'terminal' }, 'terminal')).toBe(false);
  });
});

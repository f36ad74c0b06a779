// The corpus of ON_ACTION handlers and tool access limits (test/fixtures/abl-corpus/buttons-and-access):
// every form compiles with no diagnostic, buttons are flow edges and the limits land in the IR.

import { join } from 'node:path';
import { compileProject } from '../../../abl';
import { readProject } from './helpers';

const out = compileProject(readProject(join(__dirname, '../../fixtures/abl-corpus/buttons-and-access')));

it('compiles every file with no diagnostic (no unreachable step, no ignored key)', () => {
  expect(out.diagnostics).toEqual([]);
  expect(out.ok).toBe(true);
});

it('makes every ON_ACTION handler an action branch, ahead of ON_INPUT', () => {
  const steps = out.agents.Button_Menu!.flow!.steps;
  expect(steps.menu!.on_input.map((b) => b.condition)).toEqual([{ kind: 'action', id: 'pay_now' }, { kind: 'action', id: 'talk' }]);
  expect(steps.confirm!.on_input.map((b) => b.condition.kind === 'action' ? b.condition.id : b.condition.kind)).toEqual(['yes', 'again', 'else']);
  expect(steps.menu!.channel).not.toHaveProperty('on_action');
});

it('stores what each tool may receive, imported tools included', () => {
  const access = Object.fromEntries(out.agents.Limited_Tools!.tools.map((t) => [t.name, t.access]));
  expect(access).toEqual({
    lookup_customer: { pii: { allow: ['email'] }, context: ['locale', 'channel'] },
    log_event: { pii: 'none', context: [] },
    notify: { pii: 'masked', context: ['locale'] },
    audit: { pii: 'none', context: null },
  });
});

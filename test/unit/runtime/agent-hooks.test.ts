// HOOKS before_agent / after_agent: when an agent becomes / stops being the active agent (session
// start, handoff, return, delegated child, COMPLETE); `agentHooks: false` (runs recorded before the
// patch `agent-hooks-v1`) keeps the old behaviour.

import { compileProject, type CompilationOutput, type ProjectFile } from '../../../abl';
import { delegateOutcome, type RuntimeOptions } from '../../../abl/runtime';
import { Driver, llmText, scripted, toolOk } from './driver';

const DESK = `AGENT: Desk
GOAL: "Greet and route."
TOOLS:
  audit(event: string) -> {ok: boolean}
    type: sandbox
    runtime: javascript
    code: |
      function main(p) { return { ok: true }; }
ON_START:
  RESPOND: "Welcome{{desk_seen}}."
HOOKS:
  before_agent:
    SET: desk_seen = "!"
    CALL: audit(event = "desk in")
    AS: audit_in
    RESPOND: "[desk in]"
  after_agent:
    SET: desk_left = true
    RESPOND: "[desk out]"
HANDOFF:
  - TO: Vault
    WHEN: intent == "vault"
    CONTEXT:
      pass: [desk_seen]
    RETURN: true
  - TO: Shop
    WHEN: intent == "shop"
    RETURN: false
COMPLETE:
  - WHEN: intent == "bye"
    RESPOND: "Bye."
`;

const VAULT = `AGENT: Vault
GOAL: "Open the vault."
ON_START:
  RESPOND: "Vault open{{vault_mark}}."
HOOKS:
  before_agent:
    SET: vault_mark = "*"
    RESPOND: "[vault in, from desk: {{desk_seen}}]"
  after_agent:
    RESPOND: "[vault out]"
COMPLETE:
  - WHEN: input == "done"
    RESPOND: "Vault closed."
`;

const SHOP = `AGENT: Shop
GOAL: "Sell."
COMPLETE:
  - WHEN: input == "buy"
    RESPOND: "Sold."
`;

const CHEF = `AGENT: Chef
GOAL: "Say the dish of the day."
HOOKS:
  before_agent:
    SET: dish = "soup"
  after_agent:
    RESPOND: "Chef done with {{dish}}."
COMPLETE:
  - WHEN: dish IS SET
    RESPOND: "Soup."
`;

function project(): CompilationOutput {
  const files: ProjectFile[] = [
    { path: 'agents/Desk.agent.abl', content: DESK },
    { path: 'agents/Vault.agent.abl', content: VAULT },
    { path: 'agents/Shop.agent.abl', content: SHOP },
    { path: 'agents/Chef.agent.abl', content: CHEF },
  ];
  const compiled = compileProject(files);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Desk' };
}

function desk(options: Partial<RuntimeOptions> = {}): { d: Driver; audits: string[] } {
  const audits: string[] = [];
  const d = new Driver(
    scripted({
      tools: { audit: (a, id) => (audits.push(String(a.event)), toolOk(id, { ok: true })) },
      llm: (cmd) => llmText(cmd.id, `${cmd.agent} says hi`),
    }),
    project(),
    1_700_000_000_000,
    options,
  );
  return { d, audits };
}

const hooks = (d: Driver) => d.traceOf('decision').filter((x) => x.decisionKind === 'hook').map((x) => `${x.agent} ${x.decision} (${x.reasoning})`);

describe('HOOKS before_agent / after_agent', () => {
  test('before_agent runs at session start, before ON_START, with its CALL', () => {
    const { d, audits } = desk();
    expect(d.start()).toEqual(['[desk in]', 'Welcome!.']);
    expect(audits).toEqual(['desk in']);
    expect(d.commands).toEqual([expect.objectContaining({ type: 'call_tool', tool: 'audit', args: { event: 'desk in' } })]);
    expect(d.vars('Desk')).toMatchObject({ desk_seen: '!', audit_in: { ok: true } });
    expect(hooks(d)).toEqual(['Desk before_agent (session start)']);
  });

  test('a handoff runs the leaving agent\'s after_agent, then the target\'s before_agent before its ON_START', () => {
    const { d } = desk();
    d.start();
    expect(d.send('vault please', { intent: 'vault' })).toEqual(['[desk out]', '[vault in, from desk: !]', 'Vault open*.', 'Vault says hi']);
    expect(d.vars('Desk').desk_left).toBe(true);
    expect(d.vars('Vault').vault_mark).toBe('*');
    expect(hooks(d)).toEqual(['Desk before_agent (session start)', 'Desk after_agent (handoff to Vault)', 'Vault before_agent (handoff from Desk)']);
    // The hook decisions sit around the handoff itself.
    const kinds = d.trace.flatMap((t) => (t.type === 'handoff' ? ['handoff'] : t.type === 'decision' && t.data.decisionKind === 'hook' ? [t.data.decision] : []));
    expect(kinds).toEqual(['before_agent', 'after_agent', 'handoff', 'before_agent']);
  });

  test('a RETURN child completing runs its after_agent, and the resumed parent runs before_agent again', () => {
    const { d, audits } = desk();
    d.start();
    d.send('vault please', { intent: 'vault' });
    expect(d.send('done')).toEqual(['Vault closed.', '[vault out]', '[desk in]']);
    expect(d.active()).toBe('Desk');
    expect(audits).toEqual(['desk in', 'desk in']);
    expect(hooks(d).slice(3)).toEqual(['Vault after_agent (complete)', 'Desk before_agent (returned from Vault)']);
    // The parent's history holds the child's last reply, which is now its after_agent RESPOND.
    expect(d.state.threads[0]?.history.some((t) => t.content === '[Vault] [vault out]')).toBe(true);
  });

  test('after_agent runs on COMPLETE, after its RESPOND, and its reply ends the session', () => {
    const { d } = desk();
    d.start();
    expect(d.send('bye', { intent: 'bye' })).toEqual(['Bye.', '[desk out]']);
    expect(d.last.outcome).toBe('completed');
    expect(d.state.result).toMatchObject({ ok: true, response: '[desk out]' });
    expect(hooks(d)).toEqual(['Desk before_agent (session start)', 'Desk after_agent (complete)']);
  });

  test('a handoff without RETURN runs after_agent; a target without hooks runs nothing', () => {
    const { d } = desk();
    d.start();
    expect(d.send('shop', { intent: 'shop' })).toEqual(['[desk out]', 'Shop says hi']);
    expect(d.active()).toBe('Shop');
    expect(hooks(d)).toEqual(['Desk before_agent (session start)', 'Desk after_agent (handoff to Shop)']);
  });

  test('a delegated child runs before_agent when it starts and after_agent when it finishes', () => {
    const { d } = desk();
    const r = d.interp.advance(d.interp.initDelegateState('Chef', {}), { type: 'start' });
    expect(r.outcome).toBe('completed');
    expect(r.responses).toEqual(['Soup.', 'Chef done with soup.']);
    expect(delegateOutcome(r.state, ['dish'])).toEqual({ agent: 'Chef', status: 'completed', response: 'Chef done with soup.', returns: { dish: 'soup' } });
    expect(r.trace.filter((t) => t.type === 'decision' && t.data.decisionKind === 'hook').map((t) => t.data)).toEqual([
      { decisionKind: 'hook', decision: 'before_agent', agent: 'Chef', reasoning: 'delegated' },
      { decisionKind: 'hook', decision: 'after_agent', agent: 'Chef', reasoning: 'complete' },
    ]);
  });

  test('agentHooks: false keeps the old behaviour (no hook runs, no CALL is made)', () => {
    const { d, audits } = desk({ agentHooks: false });
    expect(d.start()).toEqual(['Welcome.']);
    expect(d.send('vault please', { intent: 'vault' })).toEqual(['Vault open.', 'Vault says hi']);
    expect(d.send('done')).toEqual(['Vault closed.']);
    expect(audits).toEqual([]);
    expect(d.commands.map((c) => c.type)).toEqual(['call_llm']);
    expect(hooks(d)).toEqual([]);
    expect(d.vars('Desk').desk_left).toBeUndefined();
    const child = d.interp.advance(d.interp.initDelegateState('Chef', {}), { type: 'start' });
    // Without before_agent the child never sets `dish`, so it cannot complete.
    expect(delegateOutcome(child.state)).toMatchObject({ agent: 'Chef', status: 'failed', error: { kind: 'needs_input' } });
  });
});

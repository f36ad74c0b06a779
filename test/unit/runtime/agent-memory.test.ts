// Agent memory in the interpreter: RESET policies, ACCESS and grant_memory, remember TTLs and the
// writes the workflow saves, recall (what it makes readable and what reaches the model), and the
// session's contact as `user.*`; with the option off (runs recorded before) none of it applies.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import type { RuntimeCommand } from '../../../abl/runtime';
import { Driver, llmText, scripted, toolOk } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

function project(...files: string[]): CompilationOutput {
  const out = compileProject(files.map((content) => ({ path: `agents/${/^AGENT:\s*(\w+)/m.exec(content)?.[1]}.agent.abl`, content })));
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out;
}

const noEffects = scripted({});

describe('RESET policies', () => {
  const steps = project(`AGENT: Steps
GOAL: "Count"
MEMORY:
  session:
    - tries
      INITIAL: 0
      RESET: per_step
    - total
      INITIAL: 0
FLOW:
  steps: [one, two]
  one:
    REASONING: false
    SET:
      tries = tries + 1
      total = total + 1
    RESPOND: "one"
    ON_INPUT:
      - ELSE:
        THEN: two
  two:
    REASONING: false
    SET:
      total = total + 1
    RESPOND: "two"
    ON_INPUT:
      - ELSE:
        THEN: one
`);

  test('per_step goes back to INITIAL as each step is entered; per_session keeps counting', () => {
    const d = new Driver(noEffects, steps);
    d.start();
    expect(d.vars()).toMatchObject({ tries: 1, total: 1 });
    d.send('next');
    expect(d.vars()).toMatchObject({ tries: 0, total: 2 });
    d.send('again');
    expect(d.vars()).toMatchObject({ tries: 1, total: 3 });
  });

  test('with the option off (runs recorded before) per_step keeps its value', () => {
    const d = new Driver(noEffects, steps, undefined, { agentMemory: false });
    d.start();
    d.send('next');
    expect(d.vars()).toMatchObject({ tries: 1, total: 2 });
  });

  const visits = project(`AGENT: Visits
GOAL: "Count visits"
MEMORY:
  session:
    - visits
      INITIAL: 0
      RESET: never
FLOW:
  steps: [hello]
  hello:
    REASONING: false
    SET: visits = visits + 1
    RESPOND: "Visit {{visits}}"
    ON_INPUT:
      - ELSE:
        THEN: hello
`);

  test('never: a change is kept and recorded for saving; the next session starts from it', () => {
    const d = new Driver(noEffects, visits);
    // The step says its RESPOND as it is entered, before its SET.
    expect(d.start()).toEqual(['Visit 0']);
    expect(d.state.kept).toEqual({ Visits: { visits: 1 } });
    expect(d.state.memoryWrites).toEqual({ 'session:Visits.visits': { ttlMs: null } });
    const next = new Driver(noEffects, visits);
    expect(next.start({ type: 'start', kept: { Visits: { visits: 4 } } })).toEqual(['Visit 4']);
    expect(next.state.kept).toEqual({ Visits: { visits: 5 } });
  });

  test('per_activation goes back to INITIAL when a handoff returns to the agent', () => {
    const compiled = project(
      `AGENT: Front
GOAL: "Route"
MEMORY:
  session:
    - seen
      INITIAL: 0
      RESET: per_activation
HANDOFF:
  - TO: Helper
    WHEN: input == "help"
    RETURN: true
FLOW:
  steps: [menu]
  menu:
    REASONING: false
    SET: seen = seen + 1
    RESPOND: "Menu {{seen}}"
    ON_INPUT:
      - ELSE:
        THEN: menu
`,
      `AGENT: Helper
GOAL: "Help"
COMPLETE:
  - WHEN: input == "done"
    RESPOND: "Helped."
FLOW:
  steps: [wait]
  wait:
    REASONING: false
    RESPOND: "Say done."
    ON_INPUT:
      - ELSE:
        THEN: wait
`,
    );
    const d = new Driver(noEffects, compiled);
    d.start();
    d.send('more');
    expect(d.vars('Front').seen).toBe(2);
    d.send('help');
    expect(d.active()).toBe('Helper');
    d.send('done');
    expect(d.active()).toBe('Front');
    expect(d.vars('Front').seen).toBe(0);
  });
});

describe('persistent facts: access, grants, TTL', () => {
  const front = `AGENT: Front
GOAL: "Route"
MEMORY:
  persistent:
    - user.tier
      ACCESS: read
    - user.note
HANDOFF:
  - TO: Granted
    WHEN: input == "granted"
    CONTEXT:
      grant_memory: [user.tier, user.note]
  - TO: Plain
    WHEN: input == "plain"
FLOW:
  steps: [menu]
  menu:
    REASONING: false
    RESPOND: "Menu"
    ON_INPUT:
      - ELSE:
        THEN: menu
`;
  const writer = (name: string) => `AGENT: ${name}
GOAL: "Write"
FLOW:
  steps: [write]
  write:
    REASONING: false
    SET:
      user.note = "from ${name}"
      user.tier = "gold"
    RESPOND: "Wrote, tier {{user.tier}}"
`;
  const compiled = project(front, writer('Granted'), writer('Plain'));

  test('a granted path is written as a fact; a read-only one is refused with a memory_access error', () => {
    const d = new Driver(noEffects, compiled);
    d.start({ type: 'start', memory: { 'user.tier': 'silver' } });
    expect(d.send('granted')).toEqual(['Wrote, tier silver']);
    expect(d.state.memory).toEqual({ 'user.tier': 'silver', 'user.note': 'from Granted' });
    expect(d.state.memoryWrites).toEqual({ 'user.note': { ttlMs: null } });
    expect(d.traceOf('error')).toEqual([{ agent: 'Granted', kind: 'memory_access', message: 'SET user.tier refused: Granted may only read "user.tier" (ACCESS: read)' }]);
  });

  test('CLEAR of a writable fact deletes it (saved as null); of a read-only one is refused', () => {
    const c = project(`AGENT: Forget
GOAL: "Forget"
MEMORY:
  persistent:
    - user.note
    - user.tier
      ACCESS: read
FLOW:
  steps: [forget]
  forget:
    REASONING: false
    CLEAR: [user.note, user.tier]
    RESPOND: "Forgot"
`);
    const d = new Driver(noEffects, c);
    d.start({ type: 'start', memory: { 'user.note': 'x', 'user.tier': 'gold' } });
    expect(d.state.memory).toEqual({ 'user.note': null, 'user.tier': 'gold' });
    expect(d.state.memoryWrites).toEqual({ 'user.note': { ttlMs: null } });
    expect(d.traceOf('error').map((e) => e.kind)).toEqual(['memory_access']);
  });

  test('without a grant the paths are the agent\'s own variables: no fact is read or written', () => {
    const d = new Driver(noEffects, compiled);
    d.start({ type: 'start', memory: { 'user.tier': 'silver' } });
    // RESPOND comes before the step's SET: the fact it may not read shows as nothing.
    expect(d.send('plain')).toEqual(['Wrote, tier ']);
    expect(d.state.memory).toEqual({ 'user.tier': 'silver' });
    expect(d.state.memoryWrites).toBeUndefined();
    expect(d.vars('Plain').user).toEqual({ note: 'from Plain', tier: 'gold' });
  });

  test('remember writes with its TTL; an unchanged value is not written again', () => {
    const c = project(`AGENT: Rem
GOAL: "Remember"
MEMORY:
  persistent:
    - user.tier
  remember:
    - WHEN: tier IS SET
      STORE: tier -> user.tier
      TTL: "2s"
FLOW:
  steps: [ask]
  ask:
    REASONING: false
    GATHER:
      - tier: required
        prompt: "Which tier?"
    RESPOND: "Noted {{user.tier}}"
    ON_INPUT:
      - ELSE:
        THEN: ask
`);
    const d = new Driver(noEffects, c);
    d.start({ type: 'start', memory: { 'user.tier': 'gold' }, gatherValues: { tier: 'gold' } });
    expect(d.state.memoryWrites).toBeUndefined();
    d.state.memoryWrites = undefined;
    d.start({ type: 'start', gatherValues: { tier: 'silver' } });
    expect(d.state.memory['user.tier']).toBe('silver');
    expect(d.state.memoryWrites).toEqual({ 'user.tier': { ttlMs: 2000 } });
  });
});

describe('recall and user.*', () => {
  const reasoning = project(`AGENT: Concierge
GOAL: "Help the guest"
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "https://api.example.com/lookup"
    method: GET
MEMORY:
  persistent:
    - user.tier
    - user.city
  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.tier, user.display_name]
    - ON: tool:lookup:after
      ACTION: prompt_llm
      INSTRUCTION: "Mention the guest's city, {{user.city}}."
      PATHS: [user.city]
`);

  function run(memory: Record<string, Json>): LlmCommand[] {
    const calls: LlmCommand[] = [];
    let n = 0;
    const d = new Driver(
      scripted({
        llm: (cmd) => {
          calls.push(cmd);
          n++;
          if (n === 1) return { type: 'llm_result', commandId: cmd.id, ok: true, content: '', toolCalls: [{ id: 'x1', name: 'lookup', arguments: '{"q":"spa"}' }] };
          return llmText(cmd.id, 'Done.');
        },
        tools: { lookup: (_a, id) => toolOk(id, { answer: 'open' }) },
      }),
      reasoning,
    );
    d.start({ type: 'start', memory, user: { id: 'ct_1', display_name: 'Ann', is_known: true } });
    d.send('Is the spa open?');
    return calls;
  }

  test('inject_context puts the facts in the system prompt from the start; prompt_llm adds its instruction after the tool', () => {
    const calls = run({ 'user.tier': 'gold', 'user.city': 'Lyon' });
    const system = (c: LlmCommand) => c.request.messages[0]?.content ?? '';
    expect(system(calls[0]!)).toContain('Recalled from memory:\n- user.tier: "gold"\n- user.display_name: "Ann"');
    expect(system(calls[0]!)).not.toContain('Mention the guest');
    expect(system(calls[1]!)).toContain('- user.city: "Lyon"');
    expect(system(calls[1]!)).toContain("Memory instructions:\n- Mention the guest's city, Lyon.");
  });

  const greeter = project(`AGENT: Greeter
GOAL: "Greet"
MEMORY:
  persistent:
    - user.company
  recall:
    - ON: session:start
      ACTION: load_memory
      PATHS: [team.plan]
FLOW:
  steps: [hi]
  hi:
    REASONING: false
    RESPOND: "Hi {{user.display_name}} of {{user.company}}, known {{user.is_known}}, plan {{team.plan}}, secret {{other.fact}}"
`);

  test('user.* reads the contact, a declared fact of the same path wins; load_memory makes its paths readable, others stay hidden', () => {
    const d = new Driver(noEffects, greeter);
    const replies = d.start({
      type: 'start',
      memory: { 'user.company': 'Acme Fact', 'team.plan': 'pro', 'other.fact': 'x' },
      user: { id: 'ct_1', display_name: 'Ann', company: 'Acme Contact', is_known: true },
    });
    expect(replies).toEqual(['Hi Ann of Acme Fact, known true, plan pro, secret ']);
  });
});

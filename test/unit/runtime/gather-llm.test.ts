// GATHER `STRATEGY: llm|hybrid` in a flow step: one `call_llm` (purpose `extraction`) for the
// open fields, the answer parsed defensively and validated like pattern values, and that
// `gatherLlm: false` (runs recorded before patch gather-llm-v1) keeps the pattern path; LLM-judged
// validate rules (purpose `validation`) of a step GATHER and of an agent's top-level GATHER.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { EXTRACTION_MARKER } from '../../../abl/gather-llm';
import type { RuntimeCommand, RuntimeEvent } from '../../../abl/runtime';
import { decideLocalReply } from '../../../providers/llm/local';
import { Driver, llmText, scripted } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

const booker = (strategy: string | null) => `AGENT: Booker
GOAL: "Book a table."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - party: required
        type: number
        prompt: "How many people?"
        retry_prompt: "Sorry, how many people (at most 10)?"
        validate: max(10)
      - day: required
        type: date
        prompt: "Which day?"
      - guest: required
        prompt: "Your name?"
${strategy ? `    STRATEGY: ${strategy}\n` : ''}    THEN: done
  done:
    REASONING: false
    RESPOND: "Booked {{party}} for {{guest}} on {{day}}."
`;

function project(strategy: string | null): CompilationOutput {
  const compiled = compileProject([{ path: 'agents/Booker.agent.abl', content: booker(strategy) }]);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Booker' };
}

/** A Booker session whose LLM answers each call with `answer(cmd)`; every LLM command is kept. */
function session(strategy: string | null, answer: (cmd: LlmCommand) => RuntimeEvent, gatherLlm?: boolean): { d: Driver; calls: LlmCommand[] } {
  const calls: LlmCommand[] = [];
  const d = new Driver(
    scripted({ llm: (cmd) => (calls.push(cmd), answer(cmd)) }),
    project(strategy),
    1_700_000_000_000,
    gatherLlm === undefined ? {} : { gatherLlm },
  );
  return { d, calls };
}

const json = (v: Json) => (cmd: LlmCommand): RuntimeEvent => llmText(cmd.id, JSON.stringify(v));
const schemaOf = (cmd: LlmCommand): Record<string, unknown> => {
  const system = cmd.request.messages[0]?.content ?? '';
  const line = system.split('\n').find((l) => l.startsWith('{')) ?? '{}';
  return JSON.parse(line) as Record<string, unknown>;
};
const asked = (cmd: LlmCommand): string[] => Object.keys(schemaOf(cmd).properties as object);

describe('GATHER STRATEGY: llm', () => {
  it('extracts several fields from one message with one extraction call', () => {
    const { d, calls } = session('llm', json({ party: 4, day: '2025-03-14', guest: 'Ann Lee' }));
    expect(d.start()).toEqual(['How many people?']);
    const out = d.send('A table for four on the 14th of March 2025, name is Ann Lee');
    expect(calls).toHaveLength(1);
    const cmd = calls[0] as LlmCommand;
    expect(cmd.purpose).toBe('extraction');
    expect(cmd.request.tools).toEqual([]);
    expect(cmd.request.messages[0]?.role).toBe('system');
    expect(cmd.request.messages[0]?.content.startsWith(EXTRACTION_MARKER)).toBe(true);
    expect(cmd.request.messages[1]).toEqual({ role: 'user', content: 'A table for four on the 14th of March 2025, name is Ann Lee' });
    expect(asked(cmd)).toEqual(['party', 'day', 'guest']);
    expect((schemaOf(cmd).properties as Record<string, Json>).party).toMatchObject({ type: 'number' });
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14', guest: 'Ann Lee' });
    expect(out).toEqual(['Booked 4 for Ann Lee on 2025-03-14.']);
  });

  it('coerces answered values like pattern values ("4" → 4, a date string → ISO date)', () => {
    const { d } = session('llm', json({ party: '4', day: 'March 14, 2025', guest: 'Ann' }));
    d.start();
    d.send('four of us on March 14, 2025, Ann');
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14', guest: 'Ann' });
  });

  it('validates LLM-extracted values: a rejected one is asked for again with the retry prompt', () => {
    const { d, calls } = session('llm', (cmd) => (calls.length === 1 ? json({ party: 12, day: '2025-03-14', guest: 'Ann' })(cmd) : json({ party: 8 })(cmd)));
    d.start();
    expect(d.send('twelve of us on 2025-03-14, Ann')).toEqual(['Sorry, how many people (at most 10)?']);
    expect(d.vars().party).toBeUndefined();
    expect(d.vars()).toMatchObject({ day: '2025-03-14', guest: 'Ann' });
    // The second call asks only for the field still open.
    expect(d.send('eight then')).toEqual(['Booked 8 for Ann on 2025-03-14.']);
    expect(asked(calls[1] as LlmCommand)).toEqual(['party']);
  });

  it('a bad JSON answer extracts nothing and records an extraction error', () => {
    const { d } = session('llm', (cmd) => llmText(cmd.id, 'Sure! Four people on the 14th.'));
    d.start();
    const out = d.send('4 people on 2025-03-14, Ann');
    expect(d.vars()).not.toHaveProperty('party');
    expect(d.vars()).not.toHaveProperty('day');
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ agent: 'Booker', kind: 'extraction_error', message: expect.stringContaining('nothing extracted') })]);
    expect(out).toEqual(['Sorry, how many people (at most 10)?']);
  });

  it('a failed extraction call extracts nothing and records an extraction error', () => {
    const { d } = session('llm', (cmd) => ({ type: 'llm_result', commandId: cmd.id, ok: false, error: { kind: 'timeout', message: 'timed out' } }));
    d.start();
    d.send('4 people on 2025-03-14, Ann');
    expect(d.vars()).not.toHaveProperty('party');
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ kind: 'extraction_error', message: expect.stringContaining('timed out') })]);
  });

  it('accepts a fenced JSON answer and ignores fields it did not ask for', () => {
    const { d } = session('llm', (cmd) => llmText(cmd.id, '```json\n{"party": 2, "day": "2025-03-14", "guest": "Bo", "secret": "x"}\n```'));
    d.start();
    d.send('2 on 2025-03-14, Bo');
    expect(d.vars()).toMatchObject({ party: 2, day: '2025-03-14', guest: 'Bo' });
    expect(d.vars()).not.toHaveProperty('secret');
  });

  it('with gatherLlm: false (runs recorded before gather-llm-v1) uses the pattern extractor and makes no LLM call', () => {
    const { d, calls } = session('llm', json({ party: 9, day: '2030-01-01', guest: 'Nobody' }), false);
    d.start();
    d.send('party is 4, day is 2025-03-14');
    expect(calls).toHaveLength(0);
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14' });
  });
});

describe('GATHER STRATEGY: hybrid', () => {
  it('runs the pattern extractor first and asks the model only for the fields still missing', () => {
    const { d, calls } = session('hybrid', json({ guest: 'Ann Lee', party: 99 }));
    d.start();
    const out = d.send('4 people on 2025-03-14 please, for Ann Lee');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.purpose).toBe('extraction');
    expect(asked(calls[0] as LlmCommand)).toEqual(['guest']);
    // party came from the pattern extractor; the model's unasked `party` is ignored.
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14', guest: 'Ann Lee' });
    expect(out).toEqual(['Booked 4 for Ann Lee on 2025-03-14.']);
  });

  it('makes no extraction call when the pattern extractor found every field', () => {
    const { d, calls } = session('hybrid', json({}));
    d.start();
    d.send('party is 4, day is 2025-03-14, guest is Ann');
    expect(calls).toHaveLength(0);
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14', guest: 'Ann' });
  });
});

describe('GATHER STRATEGY: pattern and the default', () => {
  it.each([['pattern'], [null]])('STRATEGY %s never calls the model', (strategy) => {
    const { d, calls } = session(strategy, json({ guest: 'X' }));
    d.start();
    d.send('4 people on 2025-03-14');
    expect(calls).toHaveLength(0);
    expect(d.vars()).toMatchObject({ party: 4, day: '2025-03-14' });
    expect(d.vars()).not.toHaveProperty('guest');
  });
});

const judged = `AGENT: Namer
GOAL: "Name a pet."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - pet: required
        prompt: "Name your pet?"
        retry_prompt: "That name won't do. Another one?"
        max_retries: 1
        validate: sounds like a real pet name
    STRATEGY: pattern
    THEN: done
    ON_EXHAUSTED:
      RESPOND: "Let's stop here."
      THEN: COMPLETE
  done:
    REASONING: false
    RESPOND: "Welcome, {{pet}}."
`;

function namer(answer: (cmd: LlmCommand) => RuntimeEvent, gatherLlm?: boolean): { d: Driver; calls: LlmCommand[] } {
  const compiled = compileProject([{ path: 'agents/Namer.agent.abl', content: judged }]);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  const calls: LlmCommand[] = [];
  const d = new Driver(scripted({ llm: (cmd) => (calls.push(cmd), answer(cmd)) }), { ...compiled, entry_agent: 'Namer' }, 1_700_000_000_000, gatherLlm === undefined ? {} : { gatherLlm });
  return { d, calls };
}
const verdict = (valid: boolean, reason = 'because') => json({ valid, reason });

describe('LLM-judged validate rules', () => {
  it('asks the model to judge the value (purpose validation) and keeps a valid one', () => {
    const { d, calls } = namer(verdict(true, 'a fine pet name'));
    expect(d.start()).toEqual(['Name your pet?']);
    expect(d.send('Biscuit')).toEqual(['Welcome, Biscuit.']);
    expect(calls).toHaveLength(1);
    const cmd = calls[0] as LlmCommand;
    expect(cmd.purpose).toBe('validation');
    expect(cmd.request.messages[0]?.content).toContain('- sounds like a real pet name');
    expect(cmd.request.messages[1]).toEqual({ role: 'user', content: 'Biscuit' });
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'validation', decision: 'pet: valid', reasoning: 'a fine pet name' }));
  });

  it('an invalid verdict behaves like a failed validation: retry_prompt, then max_retries', () => {
    const { d, calls } = namer(verdict(false, 'not a name'));
    d.start();
    expect(d.send('asdfgh')).toEqual(["That name won't do. Another one?"]);
    expect(d.vars()).not.toHaveProperty('pet');
    expect(d.send('qwerty')).toEqual(["Let's stop here."]);
    expect(calls.map((c) => c.purpose)).toEqual(['validation', 'validation']);
    expect(d.traceOf('error')).toContainEqual(expect.objectContaining({ kind: 'validation_error' }));
  });

  it('an unreadable verdict accepts the value and records an error', () => {
    const { d } = namer((cmd) => llmText(cmd.id, 'hmm, maybe'));
    d.start();
    expect(d.send('Rex')).toEqual(['Welcome, Rex.']);
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ kind: 'llm_validation_error' })]);
  });

  it('judges values the model extracted too (STRATEGY llm: extraction, then validation)', () => {
    const compiled = compileProject([{ path: 'agents/Namer.agent.abl', content: judged.replace('STRATEGY: pattern', 'STRATEGY: llm') }]);
    const calls: LlmCommand[] = [];
    const d = new Driver(
      scripted({ llm: (cmd) => (calls.push(cmd), cmd.purpose === 'extraction' ? json({ pet: 'Rex' })(cmd) : verdict(false)(cmd)) }),
      { ...compiled, entry_agent: 'Namer' },
    );
    d.start();
    expect(d.send('call him Rex')).toEqual(["That name won't do. Another one?"]);
    expect(calls.map((c) => c.purpose)).toEqual(['extraction', 'validation']);
    expect(d.vars()).not.toHaveProperty('pet');
  });

  it('with gatherLlm: false the rule is not judged and the value is kept', () => {
    const { d, calls } = namer(verdict(false), false);
    d.start();
    expect(d.send('asdfgh')).toEqual(['Welcome, asdfgh.']);
    expect(calls).toHaveLength(0);
  });
});

const topJudged = `AGENT: Petter
GOAL: "Talk about the user's pet."
GATHER:
  pet:
    prompt: "Name your pet?"
    retry_prompt: "That name won't do. Another one?"
    validate: sounds like a real pet name
`;

/**
 * A reasoning agent with a top-level GATHER field whose rule the model judges (asked for on the
 * first message, not at start); reasoning calls answer with text.
 */
function petter(judge: (cmd: LlmCommand) => RuntimeEvent, gatherLlm?: boolean): { d: Driver; calls: LlmCommand[] } {
  const compiled = compileProject([{ path: 'agents/Petter.agent.abl', content: topJudged }]);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  const calls: LlmCommand[] = [];
  const d = new Driver(
    scripted({ llm: (cmd) => (calls.push(cmd), cmd.purpose === 'validation' ? judge(cmd) : llmText(cmd.id, 'Lovely pet.')) }),
    { ...compiled, entry_agent: 'Petter' },
    1_700_000_000_000,
    gatherLlm === undefined ? {} : { gatherLlm },
  );
  return { d, calls };
}

describe('LLM-judged validate rules of a top-level (agent) GATHER', () => {
  it('judges the value (purpose validation) and stores a valid one', () => {
    const { d, calls } = petter(verdict(true, 'a fine pet name'));
    d.start();
    expect(d.send('hello')).toEqual(['Name your pet?']);
    expect(d.send('Biscuit')).toEqual(['Lovely pet.']);
    expect(d.vars().pet).toBe('Biscuit');
    expect(calls.map((c) => c.purpose)).toEqual(['validation', 'reasoning']);
    const cmd = calls[0] as LlmCommand;
    expect(cmd.agent).toBe('Petter');
    expect(cmd.request.messages[0]?.content).toContain('- sounds like a real pet name');
    expect(cmd.request.messages[1]).toEqual({ role: 'user', content: 'Biscuit' });
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'validation', decision: 'pet: valid', reasoning: 'a fine pet name' }));
  });

  it('an invalid verdict leaves the field unset and asks again with the retry prompt', () => {
    const { d, calls } = petter(verdict(false, 'not a name'));
    d.start();
    d.send('hello');
    expect(d.send('asdfgh')).toEqual(["That name won't do. Another one?"]);
    expect(d.vars()).not.toHaveProperty('pet');
    expect(calls.map((c) => c.purpose)).toEqual(['validation']);
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'validation', decision: 'pet: invalid', reasoning: 'not a name' }));
  });

  it('a broken judge accepts the value and records an llm_validation_error', () => {
    const { d } = petter((cmd) => ({ type: 'llm_result', commandId: cmd.id, ok: false, error: { kind: 'timeout', message: 'timed out' } }));
    d.start();
    d.send('hello');
    expect(d.send('Rex')).toEqual(['Lovely pet.']);
    expect(d.vars().pet).toBe('Rex');
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ agent: 'Petter', kind: 'llm_validation_error', message: expect.stringContaining('timed out') })]);
  });

  it('with gatherLlm: false the rule is not judged and the value is kept', () => {
    const { d, calls } = petter(verdict(false), false);
    d.start();
    d.send('hello');
    expect(d.send('asdfgh')).toEqual(['Lovely pet.']);
    expect(d.vars().pet).toBe('asdfgh');
    expect(calls.map((c) => c.purpose)).toEqual(['reasoning']);
  });
});

describe('with the offline local model answering', () => {
  const local = (cmd: LlmCommand): RuntimeEvent =>
    llmText(cmd.id, decideLocalReply({ messages: cmd.request.messages.map((m) => ({ role: m.role, content: m.content })) }).content);

  it.each([['llm'], ['hybrid']])('STRATEGY %s gathers what the pattern strategy would', (strategy) => {
    const { d, calls } = session(strategy, local);
    d.start();
    expect(d.send('party is 4, day is 2025-03-14')).toEqual(['Your name?']);
    expect(d.send('Ann Lee')).toEqual(['Booked 4 for Ann Lee on 2025-03-14.']);
    expect(calls.every((c) => c.purpose === 'extraction')).toBe(true);
    expect(calls.length).toBe(strategy === 'llm' ? 2 : 1);
  });
});

describe('versions compiled before the default became pattern', () => {
  /** The IR such a version stored: an unwritten STRATEGY was saved as `hybrid`, with no `strategy_authored`. */
  function legacy(strategy: 'hybrid' | 'llm'): CompilationOutput {
    const compiled = project(strategy);
    const ask = compiled.agents.Booker!.flow!.steps.ask!;
    delete ask.gather!.strategy_authored;
    return compiled;
  }

  it('runs a stored hybrid as pattern: no extraction call anyone did not write', () => {
    const calls: LlmCommand[] = [];
    const d = new Driver(scripted({ llm: (cmd) => (calls.push(cmd), json({ guest: 'Ann' })(cmd)) }), legacy('hybrid'), 1_700_000_000_000);
    d.start();
    d.send('4 people');
    expect(calls).toEqual([]);
    expect(d.vars().party).toBe(4);
  });

  it('still honours a stored llm, which only an author could have written', () => {
    const calls: LlmCommand[] = [];
    const d = new Driver(scripted({ llm: (cmd) => (calls.push(cmd), json({ party: 4 })(cmd)) }), legacy('llm'), 1_700_000_000_000);
    d.start();
    d.send('four of us');
    expect(calls.map((c) => c.purpose)).toEqual(['extraction']);
  });

  it('marks a written STRATEGY as authored, and an unwritten one as not', () => {
    expect(project('hybrid').agents.Booker!.flow!.steps.ask!.gather).toMatchObject({ strategy: 'hybrid', strategy_authored: true });
    expect(project(null).agents.Booker!.flow!.steps.ask!.gather).toMatchObject({ strategy: 'pattern', strategy_authored: false });
  });
});

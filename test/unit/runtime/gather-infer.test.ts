// GATHER `infer` (patch gather-infer-v1): an open field with `infer: true` may be inferred by the
// model in an extraction call that carries the conversation; `infer_confidence` decides whether
// the value is used, `infer_confirm` whether the user is asked to confirm it first. In a flow step
// and in an agent's top-level GATHER; off (no call) for runs recorded before the patch.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { acceptExtracted, EXTRACTION_MARKER } from '../../../abl/gather-llm';
import type { RuntimeCommand, RuntimeEvent } from '../../../abl/runtime';
import { flightsAgent } from '../../fixtures/agents/gather-and-errors';
import { Driver, llmText, scripted } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

function flight(props = ''): CompilationOutput {
  const compiled = compileProject([{ path: 'agents/Flights.agent.abl', content: flightsAgent(props) }]);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Flights' };
}

const inferred = (value: Json, confidence: number) => (cmd: LlmCommand): RuntimeEvent => llmText(cmd.id, JSON.stringify({ airport: { value, inferred: true, confidence } }));

function session(compiled: CompilationOutput, answer: (cmd: LlmCommand) => RuntimeEvent, options: { gatherInfer?: boolean | (() => boolean); gatherLlm?: boolean } = {}) {
  const calls: LlmCommand[] = [];
  const d = new Driver(scripted({ llm: (cmd) => (calls.push(cmd), cmd.purpose === 'extraction' ? answer(cmd) : llmText(cmd.id, 'Happy to help.')) }), compiled, 1_700_000_000_000, options);
  return { d, calls };
}

describe('GATHER infer in a flow step', () => {
  it('asks the model with the conversation, then asks the user to confirm the inferred value', () => {
    const { d, calls } = session(flight(), inferred('CDG', 0.9));
    expect(d.start()).toEqual(['Which airport (three letters)?']);
    expect(d.send('I am flying to see the Eiffel Tower')).toEqual(['Just to confirm: your airport is CDG. Is that right?']);
    expect(calls).toHaveLength(1);
    const system = calls[0]!.request.messages[0]!.content;
    expect(calls[0]!.purpose).toBe('extraction');
    expect(system.startsWith(EXTRACTION_MARKER)).toBe(true);
    expect(system).toContain('"x-infer":true');
    expect(system).toContain('user: I am flying to see the Eiffel Tower');
    expect(d.vars()).not.toHaveProperty('airport');
    expect(d.send('yes')).toEqual(['Flying to CDG.']);
    expect(calls).toHaveLength(1);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'inference').map((x) => x.decision)).toEqual(['airport: to confirm', 'airport: confirmed']);
  });

  it('after a no, asks the question afresh and never infers that field again', () => {
    const { d, calls } = session(flight(), inferred('CDG', 0.9));
    d.start();
    d.send('I am flying to see the Eiffel Tower');
    expect(d.send('no')).toEqual(['Which airport (three letters)?']);
    expect(d.send('the one near Versailles')).toEqual(['Three letters, please: which airport?']);
    expect(calls).toHaveLength(1);
    expect(d.send('ORY')).toEqual(['Flying to ORY.']);
  });

  it('any other answer to the confirmation is read as an answer to the question', () => {
    const { d } = session(flight(), inferred('CDG', 0.9));
    d.start();
    d.send('I am flying to see the Eiffel Tower');
    expect(d.send('ORY')).toEqual(['Flying to ORY.']);
  });

  it('does not use a value inferred below infer_confidence', () => {
    const { d } = session(flight('        infer_confidence: 0.95\n'), inferred('CDG', 0.9));
    d.start();
    expect(d.send('I am flying to see the Eiffel Tower')).toEqual(['Three letters, please: which airport?']);
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'inference', decision: 'airport: not used', reasoning: 'confidence 0.90, threshold 0.95' }));
  });

  it('with infer_confirm: false uses the value at once', () => {
    const { d } = session(flight('        infer_confirm: false\n'), inferred('CDG', 0.9));
    d.start();
    expect(d.send('I am flying to see the Eiffel Tower')).toEqual(['Flying to CDG.']);
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'inference', decision: 'airport: accepted' }));
  });

  it('an invalid inferred value is dropped (nobody said it)', () => {
    const { d } = session(flight('        infer_confirm: false\n'), inferred('Paris', 0.99));
    d.start();
    expect(d.send('I am flying to see the Eiffel Tower')).toEqual(['Three letters, please: which airport?']);
    expect(d.vars()).not.toHaveProperty('airport');
  });

  it('makes no call for runs recorded before the patch, and asks the lazy option only for an open infer field', () => {
    let asked = 0;
    const off = session(flight(), inferred('CDG', 0.9), { gatherInfer: () => (asked++, false) });
    off.d.start();
    expect(asked).toBe(0);
    expect(off.d.send('I am flying to see the Eiffel Tower')).toEqual(['Three letters, please: which airport?']);
    expect(off.calls).toHaveLength(0);
    expect(asked).toBe(1);
    const old = session(flight(), inferred('CDG', 0.9), { gatherLlm: false });
    old.d.start();
    old.d.send('I am flying to see the Eiffel Tower');
    expect(old.calls).toHaveLength(0);
  });
});

describe("GATHER infer in an agent's top-level GATHER", () => {
  const compiled = (() => {
    const c = compileProject([
      {
        path: 'agents/Concierge.agent.abl',
        content: `AGENT: Concierge
GOAL: "Help with a trip."
GATHER:
  airport:
    prompt: "Which airport (three letters)?"
    validate: pattern(^[A-Z]{3}$)
    infer: true
`,
      },
    ]);
    expect(c.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    return { ...c, entry_agent: 'Concierge' };
  })();

  it('confirms an inferred value before the reasoning loop runs with it', () => {
    const { d, calls } = session(compiled, inferred('CDG', 0.85));
    d.start();
    expect(d.send('Hello! Off to see the Eiffel Tower next week')).toEqual(['Just to confirm: your airport is CDG. Is that right?']);
    expect(d.send("yes, that's right")).toEqual(['Happy to help.']);
    expect(d.vars().airport).toBe('CDG');
    expect(calls.map((c) => c.purpose)).toEqual(['extraction', 'reasoning']);
    const reasoning = calls[1]!.request.messages[0]!.content;
    expect(reasoning).toContain('- airport: "CDG"');
  });
});

describe('reading an inference answer', () => {
  const fields = flight().agents.Flights!.flow!.steps.ask!.gather!.fields;

  it('takes stated values as before, and inferred ones only when inference was asked for', () => {
    expect(acceptExtracted(fields, { airport: 'CDG' }, true)).toEqual({ values: { airport: 'CDG' }, invalid: [], inferred: [] });
    expect(acceptExtracted(fields, { airport: { value: 'CDG', inferred: false } }, true).values).toEqual({ airport: 'CDG' });
    expect(acceptExtracted(fields, { airport: { value: 'CDG', inferred: true, confidence: 3 } }, true).inferred).toEqual([{ field: 'airport', value: 'CDG', confidence: 1 }]);
    expect(acceptExtracted(fields, { airport: { value: 'CDG', inferred: true, confidence: 0.9 } }, false)).toEqual({ values: {}, invalid: [], inferred: [] });
    expect(acceptExtracted(fields, { airport: { value: 'cdg?', inferred: true, confidence: 0.9 } }, true)).toEqual({ values: {}, invalid: [], inferred: [] });
  });
});

describe('GATHER infer with CORRECTIONS', () => {
  it('does not ask the model to infer a field that is already filled', () => {
    // A second field after the airport, and CORRECTIONS: true (filled fields stay open to corrections).
    const source = flightsAgent('      - traveller: required\n        prompt: "Your name?"\n').replace('    THEN: done\n  done:', '    CORRECTIONS: true\n    THEN: done\n  done:');
    const compiled = compileProject([{ path: 'agents/Flights.agent.abl', content: source }]);
    expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const { d, calls } = session({ ...compiled, entry_agent: 'Flights' }, inferred('CDG', 0.9));
    d.start();
    expect(d.send('airport: ORY')).toEqual(['Your name?']);
    expect(d.send('Ann')).toEqual(['Flying to ORY.']);
    expect(calls).toHaveLength(0);
  });
});

describe('the confirmation question', () => {
  it('comes from MESSAGES.confirm_inferred when the agent has one', () => {
    const source = `${flightsAgent()}MESSAGES:\n  confirm_inferred: "You mean {{value}} as your {{field}}? (yes/no)"\n`;
    const compiled = compileProject([{ path: 'agents/Flights.agent.abl', content: source }]);
    expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const { d } = session({ ...compiled, entry_agent: 'Flights' }, inferred('CDG', 0.9));
    d.start();
    expect(d.send('I am flying to see the Eiffel Tower')).toEqual(['You mean CDG as your airport? (yes/no)']);
  });
});

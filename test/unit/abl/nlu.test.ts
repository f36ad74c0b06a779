// The NLU section compiles to typed IR (intents, entities, glossary, threshold, fallback) in every
// documented shape, and every shape it cannot read is a diagnostic with its place.

import { compileProject } from '../../../abl';
import { agentProject, compileAgentBody } from './helpers';

const documented = `NLU:
  intents:
    - NAME: send_wire
      PATTERNS: ["wire transfer", "send money"]
      EXAMPLES: ["I need to wire $50,000 to Germany", "Can I send a domestic wire?"]
      ENTITIES: [currency_code, amount]
    - NAME: book_flight
      DESCRIPTION: "The user wants to fly somewhere"
      PATTERNS: ["book flight", "fly to"]
      EXAMPLES:
        - "I want to fly to Paris next Tuesday"
        - "Find me a round trip to London"
  entities:
    - NAME: currency_code
      TYPE: enum
      VALUES: [USD, EUR, GBP, JPY]
      SYNONYMS:
        USD: [dollars, usd, bucks]
        EUR: [euros, eur]
    - NAME: amount
      TYPE: number
    - NAME: reference
      TYPE: pattern
      PATTERN: "RF-[0-9]+"
    - NAME: destination
      TYPE: location
  glossary:
    - "SWIFT/BIC -- Code identifying a bank globally"
`;

describe('NLU section', () => {
  it('compiles the documented form into typed IR, with no diagnostic', () => {
    const out = compileAgentBody(documented);
    expect(out.diagnostics).toEqual([]);
    const nlu = out.agents.A?.nlu;
    expect(nlu?.intents.map((i) => [i.name, i.patterns, i.examples.length, i.entities, i.description])).toEqual([
      ['send_wire', ['wire transfer', 'send money'], 2, ['currency_code', 'amount'], null],
      ['book_flight', ['book flight', 'fly to'], 2, [], 'The user wants to fly somewhere'],
    ]);
    expect(nlu?.entities.map((e) => [e.name, e.type])).toEqual([['currency_code', 'enum'], ['amount', 'number'], ['reference', 'pattern'], ['destination', 'location']]);
    expect(nlu?.entities[0]).toMatchObject({ values: ['USD', 'EUR', 'GBP', 'JPY'], synonyms: { USD: ['dollars', 'usd', 'bucks'], EUR: ['euros', 'eur'] }, pattern: null });
    expect(nlu?.entities[2]?.pattern).toBe('RF-[0-9]+');
    expect(nlu).toMatchObject({ glossary: ['SWIFT/BIC -- Code identifying a bank globally'], threshold: 0.5, fallback_intent: null, model: null, other: {} });
    expect(nlu?.loc).toEqual({ file: 'agents/A.agent.abl', line: 3, column: 1 });
    // NLU is no longer a phase-2 section kept in extra.
    expect(out.agents.A?.extra).toEqual({});
  });

  it('reads `- name` items with properties and a map of intents the same way', () => {
    const items = compileAgentBody('NLU:\n  intents:\n    - billing\n      PATTERNS: [invoice]\n    - goodbye\n      KEYWORDS: [bye]\n');
    const map = compileAgentBody('NLU:\n  intents:\n    billing:\n      PATTERNS: [invoice]\n    goodbye:\n      KEYWORDS: [bye]\n');
    expect(items.diagnostics).toEqual([]);
    expect(map.diagnostics).toEqual([]);
    expect(items.agents.A?.nlu?.intents.map((i) => [i.name, i.patterns])).toEqual([['billing', ['invoice']], ['goodbye', ['bye']]]);
    expect(map.agents.A?.nlu?.intents.map((i) => [i.name, i.patterns])).toEqual([['billing', ['invoice']], ['goodbye', ['bye']]]);
  });

  it('keeps threshold, fallback_intent and model', () => {
    const out = compileAgentBody('NLU:\n  threshold: 0.7\n  fallback_intent: other\n  model: gpt-4o-mini\n  intents:\n    - NAME: billing\n      PATTERNS: [invoice]\n    - NAME: other\n      DESCRIPTION: "Anything else"\n');
    expect(out.diagnostics).toEqual([]);
    expect(out.agents.A?.nlu).toMatchObject({ threshold: 0.7, fallback_intent: 'other', model: 'gpt-4o-mini' });
  });

  it('an agent without NLU has no nlu key in its IR', () => {
    const out = compileAgentBody('PERSONA: "p"\n');
    expect(out.agents.A && Object.hasOwn(out.agents.A, 'nlu')).toBe(false);
  });

  it('compiles the YAML spelling to the same NLU IR', () => {
    const yaml = `agent: A
goal: "g"
nlu:
  intents:
    - name: send_wire
      patterns: ["wire transfer", "send money"]
      examples: ["I need to wire $50,000 to Germany"]
      entities: [currency_code]
  entities:
    - name: currency_code
      type: enum
      values: [USD, EUR]
      synonyms:
        USD: [dollars]
`;
    const abl = `NLU:
  intents:
    - NAME: send_wire
      PATTERNS: ["wire transfer", "send money"]
      EXAMPLES: ["I need to wire $50,000 to Germany"]
      ENTITIES: [currency_code]
  entities:
    - NAME: currency_code
      TYPE: enum
      VALUES: [USD, EUR]
      SYNONYMS:
        USD: [dollars]
`;
    const y = compileProject([{ path: 'agents/A.agent.yaml', content: yaml }]);
    const a = compileAgentBody(abl);
    expect(y.diagnostics).toEqual([]);
    const noLoc = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'loc' ? undefined : x)));
    expect(noLoc(y.agents.A?.nlu)).toEqual(noLoc(a.agents.A?.nlu));
  });

  describe('diagnostics', () => {
    const codes = (body: string) => compileProject(agentProject(body)).diagnostics.map((d) => `${d.code} ${d.line}:${d.column} ${d.message}`);

    it('an NLU that is not a block, and one with no intents', () => {
      expect(codes('NLU: yes\n')).toEqual([expect.stringMatching(/^E210 3:6 NLU expects intents:, entities: and glossary: blocks, found "yes"/)]);
      expect(codes('NLU:\n  glossary: ["a -- b"]\n')).toEqual([expect.stringMatching(/^E860 4:3 NLU: it declares no intents, so there is nothing to classify\. Add intents:/)]);
    });

    it('intents: missing NAME, a bad name, a duplicate, one with nothing to tell it apart', () => {
      expect(codes('NLU:\n  intents:\n    - PATTERNS: [x]\n    - NAME: 9lives\n      PATTERNS: [y]\n    - NAME: a\n      PATTERNS: [z]\n    - NAME: a\n      PATTERNS: [w]\n    - NAME: b\n')).toEqual([
        expect.stringMatching(/^E212 5:7 NLU intent is missing "NAME"/),
        expect.stringMatching(/^E207 6:13 "9lives" is not a valid NLU intent name/),
        expect.stringMatching(/^E860 10:7 NLU intent a: it is declared twice \(first on line 8\)/),
        expect.stringMatching(/^E860 12:7 NLU intent b: it has no PATTERNS, EXAMPLES or DESCRIPTION/),
      ]);
    });

    it('entities: missing or unknown TYPE, enum without VALUES, pattern without or with a bad PATTERN, synonyms of no value', () => {
      const out = codes(`NLU:
  intents:
    - NAME: a
      PATTERNS: [x]
  entities:
    - NAME: e1
    - NAME: e2
      TYPE: colour
    - NAME: e3
      TYPE: enum
    - NAME: e4
      TYPE: pattern
    - NAME: e5
      TYPE: pattern
      PATTERN: "(a)\\\\1"
    - NAME: e6
      TYPE: enum
      VALUES: [red]
      SYNONYMS:
        blue: [navy]
    - NAME: e7
      TYPE: number
      VALUES: [1, 2]
`);
      expect(out).toEqual([
        expect.stringMatching(/^E212 8:7 NLU entity e1 is missing "TYPE"/),
        expect.stringMatching(/^E211 10:13 NLU entity e2 TYPE must be one of enum, pattern, number, date, location, free_text; found "colour"/),
        expect.stringMatching(/^E212 11:7 NLU entity e3 \(TYPE: enum\) is missing "VALUES"/),
        expect.stringMatching(/^E212 13:7 NLU entity e4 \(TYPE: pattern\) is missing "PATTERN"/),
        expect.stringMatching(/^E310 17:16 /),
        expect.stringMatching(/^E860 21:7 NLU entity e6 SYNONYMS: "blue" is not one of its VALUES/),
        expect.stringMatching(/^W214 25:7 "VALUES\/SYNONYMS" in NLU entity e7 \(TYPE: number\) is not read/),
      ]);
    });

    it('threshold out of range and a fallback that is not an intent', () => {
      expect(codes('NLU:\n  threshold: 2\n  fallback_intent: nope\n  intents:\n    - NAME: a\n      PATTERNS: [x]\n')).toEqual([
        expect.stringMatching(/^E860 4:14 NLU threshold: 2 is not a confidence between 0 and 1/),
        expect.stringMatching(/^E860 5:20 NLU fallback_intent: "nope" is not one of the intents\. Name one of: a\./),
      ]);
    });

    it('documented settings that do not run are W861, unknown keys W213, EXAMPLES_FILE W861', () => {
      expect(codes('NLU:\n  intents:\n    - NAME: a\n      PATTERNS: [x]\n      EXAMPLES_FILE: "a.txt"\n      COLOUR: red\n  languages: [en, de]\n  mood: calm\n')).toEqual([
        expect.stringMatching(/^W861 7:7 NLU intent a EXAMPLES_FILE is stored but not run: a project holds only ABL files/),
        expect.stringMatching(/^W213 8:7 Unknown property "COLOUR" in NLU intent a/),
        expect.stringMatching(/^W861 9:3 NLU languages is stored but not run/),
        expect.stringMatching(/^W213 10:3 Unknown property "mood" in NLU/),
      ]);
    });

    it('top-level INTENTS and ENTITIES stay phase-2 sections with W206', () => {
      expect(codes('INTENTS:\n  - billing\n').map((c) => c.slice(0, 4))).toEqual(['W206']);
    });
  });
});

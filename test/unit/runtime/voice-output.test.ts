// The voice form of a step's RESPOND (VOICE ssml / plain_text) comes out beside the reply, rendered
// like it (ssml values escaped as XML text), aligned with the replies of the turn, and is dropped
// when an output guardrail changes the reply or would change the voice form.

import { compileProject, type CompilationOutput } from '../../../abl';
import { Driver, scripted } from './driver';

const agent = (guardrails = ''): CompilationOutput =>
  compileProject([
    {
      path: 'agents/Booker.agent.abl',
      content: `AGENT: Booker
GOAL: "Confirm a booking."
${guardrails}FLOW:
  steps: [hello, confirm]
  hello:
    REASONING: false
    RESPOND: "Hello."
    THEN: confirm
  confirm:
    REASONING: false
    RESPOND: "Booked for {{name}}."
    VOICE:
      ssml: "<speak>Booked for <emphasis>{{name}}</emphasis> on <say-as interpret-as=\\"date\\">12/15/2025</say-as>.</speak>"
      plain_text: "Booked for {{name}} on December fifteenth."
    ON_INPUT:
      - IF: input == "done"
        THEN: COMPLETE
`,
    },
  ]);

const start = (compiled: CompilationOutput, name: string) => {
  const d = new Driver(scripted({}), compiled);
  d.start({ type: 'start', sessionVariables: { name } });
  return d;
};

it('renders plain_text and ssml, aligned with the replies (null for one without)', () => {
  const compiled = agent();
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  const d = start(compiled, 'Ada');
  expect(d.last.responses).toEqual(['Hello.', 'Booked for Ada.']);
  expect(d.last.voices).toEqual([
    null,
    {
      ssml: '<speak>Booked for <emphasis>Ada</emphasis> on <say-as interpret-as="date">12/15/2025</say-as>.</speak>',
      plain_text: 'Booked for Ada on December fifteenth.',
    },
  ]);
});

it('escapes a value inside ssml: a variable never adds markup', () => {
  const d = start(agent(), '<audio src="https://evil.example/x.mp3"/> & co');
  const voice = d.last.voices?.[1];
  expect(voice?.ssml).toContain('<emphasis>&lt;audio src=&quot;https://evil.example/x.mp3&quot;/&gt; &amp; co</emphasis>');
  expect(voice?.plain_text).toBe('Booked for <audio src="https://evil.example/x.mp3"/> & co on December fifteenth.');
});

it("says the voice form again with the step's RESPOND on no match, and has no voices when no reply has one", () => {
  const d = start(agent(), 'Ada');
  d.send('nothing');
  expect(d.last.responses).toEqual(['Booked for Ada.']);
  expect(d.last.voices?.[0]?.plain_text).toBe('Booked for Ada on December fifteenth.');
  const e = new Driver(scripted({}), compileProject([{ path: 'agents/Plain.agent.abl', content: 'AGENT: Plain\nGOAL: "Greet."\nFLOW:\n  steps: [hi]\n  hi:\n    REASONING: false\n    RESPOND: "Hi."\n    THEN: COMPLETE\n' }]));
  e.start();
  expect(e.last.responses).toEqual(['Hi.']);
  expect(e.last.voices).toBeUndefined();
});

const REDACT_SECRET = `GUARDRAILS:
  no_secrets:
    kind: output
    check: not_matches_pattern(output, "SECRET")
    action: redact
`;

it('drops the voice form when an output guardrail changes the reply', () => {
  const d = start(agent(REDACT_SECRET), 'SECRET');
  expect(d.last.responses[1]).toBe('Booked for [REDACTED].');
  expect(d.last.voices).toBeUndefined();
});

it('drops the voice form when an output guardrail would change it, though the reply passed', () => {
  const compiled = compileProject([
    {
      path: 'agents/Booker.agent.abl',
      content: `AGENT: Booker
GOAL: "Confirm a booking."
${REDACT_SECRET}FLOW:
  steps: [confirm]
  confirm:
    REASONING: false
    RESPOND: "Booked."
    VOICE:
      plain_text: "Booked, code {{code}}."
    THEN: COMPLETE
`,
    },
  ]);
  const d = new Driver(scripted({}), compiled);
  d.start({ type: 'start', sessionVariables: { code: 'SECRET' } });
  expect(d.last.responses).toEqual(['Booked.']);
  expect(d.last.voices).toBeUndefined();
  // Only the reply's own evaluation is in the trace.
  expect(d.traceOf('guardrail_eval')).toHaveLength(1);
});

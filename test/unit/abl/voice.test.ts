// ABL VOICE: the agent's section and a step's block compile to the settings the voice channel
// reads, bad values are errors, and only keys nothing reads are warned about.
import { compileProject } from '../../../abl';

function compile(body: string) {
  const out = compileProject([{ path: 'agents/Caller.agent.abl', content: `AGENT: Caller\nGOAL: "Talk on the phone."\n${body}` }]);
  return { out, agent: out.agents.Caller, codes: out.diagnostics.map((d) => d.code) };
}

const FLOW = (voice: string) => `FLOW:\n  steps: [ask]\n  ask:\n    REASONING: false\n    RESPOND: "Hello"\n${voice}`;

it('compiles the agent section and a step block', () => {
  const { agent, codes } = compile(
    `VOICE:\n  voice: "Polly.Joanna"\n  language: en-GB\n  barge_in: false\n  speech_timeout: auto\n  silence_timeout: 7s\n` +
      FLOW('    VOICE:\n      language: es-MX\n      speech_timeout: 2\n'),
  );
  expect(codes).toEqual([]);
  expect(agent?.voice).toEqual({ voice: 'Polly.Joanna', language: 'en-GB', barge_in: false, speech_timeout: 'auto', silence_timeout: 7 });
  expect(agent?.flow?.steps.ask?.voice).toEqual({ language: 'es-MX', speech_timeout: 2 });
});

it('leaves the IR of an agent without VOICE as it was', () => {
  const { agent } = compile(FLOW(''));
  expect(agent && 'voice' in agent).toBe(false);
  expect(agent?.flow?.steps.ask && 'voice' in agent.flow.steps.ask).toBe(false);
});

it('refuses a timeout out of range and a language that is no tag', () => {
  expect(compile('VOICE:\n  silence_timeout: 90\n').codes).toEqual(['E214']);
  expect(compile('VOICE:\n  language: "english please"\n').codes).toEqual(['E211']);
});

it('warns about keys nothing reads: W213 in the section, W509 in a step, and only then', () => {
  expect(compile('VOICE:\n  pitch: high\n').codes).toEqual(['W213']);
  expect(compile(FLOW('    VOICE:\n      speed: slow\n      voice: alice\n')).codes).toEqual(['W509']);
  expect(compile(FLOW('    VOICE:\n      voice: alice\n')).codes).toEqual([]);
});

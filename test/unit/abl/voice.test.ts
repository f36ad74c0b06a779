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

describe("a step's VOICE form of its RESPOND (ssml, plain_text, instructions)", () => {
  const PUBLISHED =
    '    VOICE:\n' +
    '      ssml: |\n' +
    '        <speak>\n' +
    '          Your booking is confirmed for <say-as interpret-as="date" format="mdy">12/15/2025</say-as>.\n' +
    '        </speak>\n' +
    '      plain_text: "Your booking is confirmed for December fifteenth, {{name}}."\n';

  it('compiles ssml and plain_text into the step, with no warning', () => {
    const { agent, codes } = compile(FLOW(PUBLISHED));
    expect(codes).toEqual([]);
    const out = agent?.flow?.steps.ask?.voice_output;
    expect(out?.plain_text).toBe('Your booking is confirmed for December fifteenth, {{name}}.');
    expect(out?.ssml).toContain('<say-as interpret-as="date" format="mdy">12/15/2025</say-as>');
    expect(agent?.flow?.steps.ask?.voice).toEqual({});
  });

  it('names instructions in W510 (no voice channel here can follow them), and still compiles the rest', () => {
    const { agent, out, codes } = compile(FLOW(`${PUBLISHED}      instructions: "Speak in a warm, congratulatory tone"\n`));
    expect(codes).toEqual(['W510']);
    expect(out.diagnostics[0]?.message).toMatch(/Step "ask" has VOICE instructions/);
    expect(agent?.flow?.steps.ask?.voice_output?.plain_text).toMatch(/^Your booking/);
  });

  it('checks their templates like RESPOND', () => {
    expect(compile(FLOW('    VOICE:\n      plain_text: "Hi {{name"\n')).codes.some((c) => c.startsWith('E'))).toBe(true);
  });

  it('keeps the agent section to its settings: ssml there is W213', () => {
    expect(compile('VOICE:\n  ssml: "<speak>Hi</speak>"\n').codes).toEqual(['W213']);
  });

  it('leaves a step without ssml or plain_text without a voice form', () => {
    const { agent } = compile(FLOW('    VOICE:\n      voice: alice\n'));
    expect(agent?.flow?.steps.ask && 'voice_output' in agent.flow.steps.ask).toBe(false);
  });
});

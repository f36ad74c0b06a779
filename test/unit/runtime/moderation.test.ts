// Provider guardrails in the interpreter: the `moderate` command and its result, block / warn /
// redact on input and output, the failure policy, one call per text, the holding reply, the
// option that keeps runs recorded before them unchanged, and agents without them untouched.

import { compileProject, type CompilationOutput } from '../../../abl';
import type { ModerationAnswer, RuntimeCommand, RuntimeEvent } from '../../../abl/runtime';
import { agentProject } from '../abl/helpers';
import { Driver, llmText, type Responder } from './driver';

const AGENT = agentProject(`
GUARDRAILS:
  no_violence:
    kind: input
    provider: openai
    category: violence
    threshold: 0.5
    action: block
    message: "Let's keep this conversation safe."
  hate_watch:
    kind: input
    provider: openai_moderation
    category: hate
    threshold: 0.7
    action: warn
  safe_replies:
    kind: output
    provider: openai
    category: violence
    threshold: 0.5
    action: block
    message: "I can't say that."
`);

type Verdict = Partial<ModerationAnswer> | { fail: string };
const answer = (cmd: Extract<RuntimeCommand, { type: 'moderate' }>, v: Verdict): RuntimeEvent =>
  'fail' in v
    ? { type: 'moderation_result', commandId: cmd.id, ok: false, error: { kind: 'MODERATION_SERVER', message: v.fail } }
    : { type: 'moderation_result', commandId: cmd.id, ok: true, provider: 'openai', model: 'omni-moderation-latest', flagged: false, scores: {}, flaggedCategories: [], ...v };

/** Answers `moderate` with `judge(text)` and the LLM with `reply`. */
function driver(judge: (text: string, cmd: Extract<RuntimeCommand, { type: 'moderate' }>) => Verdict, reply = 'Happy to help.', compiled: CompilationOutput = compileProject(AGENT), options = {}): Driver {
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  const responder: Responder = (cmd) => {
    if (cmd.type === 'moderate') return answer(cmd, judge(cmd.text, cmd));
    if (cmd.type === 'call_llm') return llmText(cmd.id, reply);
    return undefined;
  };
  return new Driver(responder, compiled, undefined, options);
}

const moderations = (d: Driver) => d.commands.filter((c): c is Extract<RuntimeCommand, { type: 'moderate' }> => c.type === 'moderate');

describe('input provider guardrails', () => {
  test('a flagged message is blocked before the agent sees it; the trace has provider, category and score', () => {
    const d = driver((text) => (text.includes('hurt') ? { scores: { violence: 0.91 }, flagged: true, flaggedCategories: ['violence'] } : {}));
    d.start();
    expect(d.send('I will hurt him')).toEqual(["Let's keep this conversation safe."]);
    expect(d.commands.some((c) => c.type === 'call_llm')).toBe(false);
    expect(moderations(d)).toEqual([{ type: 'moderate', id: expect.any(String), agent: 'A', guardrail: 'no_violence', provider: 'openai', text: 'I will hurt him' }]);
    expect(d.traceOf('guardrail_eval')).toEqual([
      { guardrail: 'no_violence', kind: 'input', passed: false, action: 'block', agent: 'A', threshold: 0.5, provider: 'openai', model: 'omni-moderation-latest', category: 'violence', score: 0.91 },
    ]);
    expect(d.last.userText).toBeUndefined();
  });

  test('a clean message passes every guardrail with one moderation call per text, then the reply is checked', () => {
    const d = driver(() => ({ scores: { violence: 0.01, hate: 0.02 } }));
    d.start();
    expect(d.send('Where is my order?')).toEqual(['Happy to help.']);
    // One call for the message (shared by no_violence and hate_watch), one for the reply.
    expect(moderations(d).map((c) => [c.guardrail, c.text])).toEqual([['no_violence', 'Where is my order?'], ['safe_replies', 'Happy to help.']]);
    expect(d.traceOf('guardrail_eval').map((g) => [g.guardrail, g.passed, g.category, g.score])).toEqual([
      ['no_violence', true, 'violence', 0.01],
      ['hate_watch', true, 'hate', 0.02],
      ['safe_replies', true, 'violence', 0.01],
    ]);
  });

  test('warn only traces', () => {
    const d = driver((text) => (text.startsWith('They') ? { scores: { hate: 0.8 } } : {}));
    d.start();
    expect(d.send('They are all the same')).toEqual(['Happy to help.']);
    expect(d.traceOf('guardrail_eval').find((g) => g.guardrail === 'hate_watch')).toMatchObject({ passed: false, action: 'warn', score: 0.8 });
  });
});

describe('output provider guardrails', () => {
  test('a flagged reply is replaced by the message', () => {
    const d = driver((text) => (text.includes('fight') ? { scores: { violence: 0.7 } } : {}), 'Go and fight them.');
    d.start();
    expect(d.send('What should I do?')).toEqual(["I can't say that."]);
    expect(d.traceOf('response').map((r) => r.text)).toEqual(["I can't say that."]);
  });
});

describe('redact', () => {
  const compiled = compileProject(agentProject(`
GUARDRAILS:
  scrub:
    kind: both
    provider: local
    action: redact
`));

  test('replaces the whole text: the agent, the history and the transcript see [REDACTED]', () => {
    const d = driver((text) => (text.includes('idiot') ? { provider: 'local', flagged: true, scores: { harassment: 0.9 }, flaggedCategories: ['harassment'] } : { provider: 'local' }), 'Noted.', compiled);
    d.start();
    expect(d.send('you idiot')).toEqual(['Noted.']);
    expect(d.last.userText).toBe('[REDACTED]');
    const llm = d.commands.find((c) => c.type === 'call_llm');
    expect(llm?.type === 'call_llm' && llm.request.messages.at(-1)).toEqual({ role: 'user', content: '[REDACTED]' });
    expect(moderations(d)[0]).toMatchObject({ provider: 'local', guardrail: 'scrub_input' });
  });
});

describe('the failure policy', () => {
  const failing = (onError: string) => compileProject(agentProject(`
GUARDRAILS:
  no_violence:
    kind: input
    provider: openai
    category: violence
    threshold: 0.5
    action: block
    message: "Blocked."
${onError ? `    on_error: ${onError}\n` : ''}`));

  test('by default a failed call fails closed: the guardrail fires, with an error trace', () => {
    const d = driver(() => ({ fail: 'the provider is unavailable' }), 'Happy to help.', failing(''));
    d.start();
    expect(d.send('hello')).toEqual(['Blocked.']);
    expect(d.traceOf('guardrail_eval')).toEqual([
      { guardrail: 'no_violence', kind: 'input', passed: false, action: 'block', agent: 'A', threshold: 0.5, provider: 'openai', error: 'the provider is unavailable' },
    ]);
    expect(d.traceOf('error')).toEqual([{ agent: 'A', kind: 'moderation_error', message: 'Guardrail no_violence: the openai moderation call failed (the provider is unavailable); on_error block' }]);
  });

  test('on_error: allow fails open: the message goes on', () => {
    const d = driver(() => ({ fail: 'timed out' }), 'Happy to help.', failing('allow'));
    d.start();
    expect(d.send('hello')).toEqual(['Happy to help.']);
    expect(d.traceOf('guardrail_eval')[0]).toMatchObject({ passed: true, error: 'timed out' });
  });
});

describe('compatibility', () => {
  test('with the option off (a run recorded before them) provider guardrails do not run', () => {
    const d = driver(() => ({ scores: { violence: 1 } }), 'Happy to help.', compileProject(AGENT), { moderationGuardrails: false });
    d.start();
    expect(d.send('I will hurt him')).toEqual(['Happy to help.']);
    expect(moderations(d)).toEqual([]);
  });

  test('the option is asked only when a provider guardrail is about to run', () => {
    let asked = 0;
    const plain = compileProject(agentProject('GUARDRAILS:\n  g:\n    kind: input\n    check: word_count(input) < 50\n    action: warn\n'));
    const d = driver(() => ({}), 'Hi.', plain, { moderationGuardrails: () => (asked++, true) });
    d.start();
    d.send('hello');
    expect(asked).toBe(0);
    expect(moderations(d)).toEqual([]);
  });

  test('a holding reply while suspended runs no provider guardrail (no effect can wait there)', () => {
    const compiled = compileProject(agentProject(`
TOOLS:
  verify(name: string) -> {ok: boolean}
    type: async_webhook
    endpoint: "https://example.com/verify"
GUARDRAILS:
  no_violence:
    kind: input
    provider: openai
    category: violence
    action: block
FLOW:
  start:
    REASONING: false
    CALL: verify
    WITH:
      name: "x"
    THEN: COMPLETE
`));
    const d = driver(() => ({}), 'x', compiled);
    d.start();
    expect(d.state.pending?.kind).toBe('callback');
    const before = moderations(d).length;
    expect(d.send('any news?')[0]).toMatch(/still waiting/);
    expect(moderations(d).length).toBe(before);
  });
});

describe('tool guardrails with a provider', () => {
  const compiled = compileProject(agentProject(`
TOOLS:
  lookup(q: string) -> {answer: string}
GUARDRAILS:
  safe_args:
    kind: tool_input
    provider: openai
    category: violence
    threshold: 0.5
    action: block
    message: "I won't look that up."
`));

  test('the calls of one answer, issued in parallel, are each moderated first; a flagged one is not made', () => {
    const responder: Responder = (cmd) => {
      if (cmd.type === 'moderate') return answer(cmd, cmd.text.includes('weapon') ? { scores: { violence: 0.9 } } : {});
      if (cmd.type === 'call_llm') {
        const seen = cmd.request.messages.some((m) => m.role === 'tool');
        return seen
          ? llmText(cmd.id, 'Done.')
          : { type: 'llm_result', commandId: cmd.id, ok: true, content: '', toolCalls: [
            { id: 'a', name: 'lookup', arguments: JSON.stringify({ q: 'opening hours' }) },
            { id: 'b', name: 'lookup', arguments: JSON.stringify({ q: 'a weapon' }) },
          ] };
      }
      if (cmd.type === 'call_tool') return { type: 'tool_result', commandId: cmd.id, ok: true, value: { answer: String(cmd.args.q) } };
      return undefined;
    };
    const d = new Driver(responder, compiled, undefined, { parallelToolCalls: true });
    d.start();
    const out = d.send('look these up');
    expect(out).toContain("I won't look that up.");
    expect(d.commands.filter((c) => c.type === 'call_tool').map((c) => c.type === 'call_tool' && c.args.q)).toEqual(['opening hours']);
    expect(moderations(d).map((c) => c.text)).toEqual(['{"q":"opening hours"}', '{"q":"a weapon"}']);
    expect(new Set(d.commands.map((c) => c.id)).size).toBe(d.commands.length);
  });
});

describe('tool results with a provider guardrail', () => {
  const compiled = compileProject(agentProject(`
TOOLS:
  lookup(q: string) -> {answer: string}
GUARDRAILS:
  safe_results:
    kind: tool_output
    provider: openai
    category: sexual
    threshold: 0.5
    action: block
    message: "That result was withheld."
`));

  test('each result of a parallel batch is moderated when it is bound, with its own command; a flagged one blocks', () => {
    const responder: Responder = (cmd) => {
      if (cmd.type === 'moderate') return answer(cmd, cmd.text.includes('explicit') ? { scores: { sexual: 0.8 } } : {});
      if (cmd.type === 'call_llm') {
        const tools = cmd.request.messages.filter((m) => m.role === 'tool');
        return tools.length > 0
          ? llmText(cmd.id, `Seen: ${tools.map((m) => m.content).join(' | ')}`)
          : { type: 'llm_result', commandId: cmd.id, ok: true, content: '', toolCalls: [
            { id: 'a', name: 'lookup', arguments: JSON.stringify({ q: 'hours' }) },
            { id: 'b', name: 'lookup', arguments: JSON.stringify({ q: 'other' }) },
          ] };
      }
      if (cmd.type === 'call_tool') return { type: 'tool_result', commandId: cmd.id, ok: true, value: { answer: cmd.args.q === 'hours' ? '9 to 5' : 'explicit text' } };
      return undefined;
    };
    const d = new Driver(responder, compiled, undefined, { parallelToolCalls: true });
    d.start();
    const out = d.send('look both up');
    // As with any guardrail block of a tool, the reasoning loop stops on it.
    expect(out).toEqual(['That result was withheld.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toHaveLength(2);
    expect(moderations(d).map((c) => c.text)).toEqual(['{"answer":"9 to 5"}', '{"answer":"explicit text"}']);
    expect(new Set(d.commands.map((c) => c.id)).size).toBe(d.commands.length);
  });
});

// Guardrail actions that change or hold content: fix (each fix_strategy), reask (re-prompts, then
// blocks), filter (the check's matches removed), escalate (the content held for a person), the
// llm_check judge, their compile checks, and the option that keeps runs recorded before them as warn.

import { compileProject } from '../../../abl';
import type { RuntimeCommand } from '../../../abl/runtime';
import { agentProject, compileAgentBody } from '../abl/helpers';
import { localValidationAnswer } from '../../../abl/gather-llm';
import { Driver, llmText, scripted, toolOk } from './driver';

/** A reasoning agent whose model answers `reply(message)`. */
function agent(guardrails: string, reply: (text: string) => string = (t) => `You said: ${t}`, options = {}): Driver {
  const compiled = compileProject(agentProject(`GUARDRAILS:\n${guardrails}`));
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return new Driver((cmd) => {
    if (cmd.type !== 'call_llm') return undefined;
    const last = [...cmd.request.messages].reverse().find((m) => m.role === 'user');
    return llmText(cmd.id, reply(String(last?.content ?? '')));
  }, compiled, undefined, options);
}

const llmInputs = (d: Driver): string[] => d.commands.filter((c): c is Extract<RuntimeCommand, { type: 'call_llm' }> => c.type === 'call_llm')
  .map((c) => String([...c.request.messages].reverse().find((m) => m.role === 'user')?.content ?? ''));

describe('fix', () => {
  test('truncate cuts a reply to the bound of its length check', () => {
    const d = agent('  short:\n    kind: output\n    check: length(output) <= 20\n    action: fix\n', () => 'This reply is far too long for the channel.');
    d.start();
    expect(d.send('hi')).toEqual(['This reply is far']);
    expect(d.traceOf('decision').some((x) => x.decisionKind === 'guardrail_fix')).toBe(true);
  });

  test('strip_html, normalize and redact_pii correct the text; custom uses its expression', () => {
    const d = agent([
      '  no_html:\n    kind: output\n    check: not_matches_pattern(output, "<[a-z]")\n    action: fix\n    fix_strategy: strip_html\n',
      '  tidy:\n    kind: output\n    check: not_matches_pattern(output, "  ")\n    action: fix\n    fix_strategy: normalize\n',
      '  no_pii:\n    kind: input\n    check: NOT contains_pii(input)\n    action: fix\n    fix_strategy: redact_pii\n',
      '  polite:\n    kind: input\n    check: not_matches_pattern(input, "^!")\n    action: fix\n    fix_strategy: custom\n    fix_expression: REPLACE(input, "!", "")\n',
    ].join(''), (t) => `<b>Noted</b>   &amp;  saved:  ${t}`);
    d.start();
    expect(d.send('mail me at ann@example.com')).toEqual(['Noted & saved: mail me at [REDACTED]']);
    expect(d.send('!hello')).toEqual(['Noted & saved: hello']);
    expect(llmInputs(d)).toEqual(['mail me at [REDACTED]', 'hello']);
  });

  test('a fix that still fails its check blocks (fails closed)', () => {
    const d = agent('  no_links:\n    kind: output\n    check: not_matches_pattern(output, "https?://")\n    action: fix\n    fix_strategy: normalize\n    message: "I cannot share links."\n', () => 'See https://example.com');
    d.start();
    expect(d.send('link?')).toEqual(['I cannot share links.']);
  });
});

describe('reask', () => {
  const G = '  no_shouting:\n    kind: input\n    check: NOT matches_pattern(input, "^[A-Z !?]{8,}$")\n    action: reask\n    max_reasks: 2\n    message: "Could you say that without capitals?"\n';

  test('asks to rephrase up to max_reasks times in a row, then blocks; a passing message resets the count', () => {
    const d = agent(G);
    d.start();
    expect(d.send('WHERE IS MY ORDER')).toEqual(['Could you say that without capitals?']);
    expect(d.send('WHERE IS IT NOW')).toEqual(['Could you say that without capitals?']);
    expect(d.send('ANSWER ME NOW!!')).toEqual(["Sorry, I can't help with that."]);
    expect(llmInputs(d)).toEqual([]);
    expect(d.send('where is my order')).toEqual(['You said: where is my order']);
    expect(d.send('WHERE IS MY ORDER')).toEqual(['Could you say that without capitals?']);
  });

  test('runs recorded before the actions ran treat it as warn (guardrailActions false)', () => {
    const d = agent(G, undefined, { guardrailActions: false });
    d.start();
    expect(d.send('WHERE IS MY ORDER')).toEqual(['You said: WHERE IS MY ORDER']);
  });
});

describe('filter', () => {
  test('removes what the pattern check finds and lets the rest through', () => {
    const d = agent('  no_links:\n    kind: output\n    check: not_matches_pattern(output, "https?://\\\\S+")\n    action: filter\n', () => 'Read https://example.com/x for details.');
    d.start();
    expect(d.send('docs?')).toEqual(['Read for details.']);
  });
});

describe('escalate', () => {
  const G = '  threats:\n    kind: input\n    check: not_matches_pattern(input, "lawyer|sue you")\n    action: escalate\n    message: "Message held for review"\n';

  test('holds the message for a person; approved, it reaches the agent as it was', () => {
    const d = agent(G);
    d.start();
    const said = d.send('I will call my lawyer about the refund');
    expect(said).toEqual(['I have passed this to a member of our team. I will continue as soon as they respond.']);
    const esc = d.open.find((c) => c.type === 'escalate') as Extract<RuntimeCommand, { type: 'escalate' }>;
    expect(esc).toMatchObject({ reason: 'Message held for review', tags: ['guardrail'], context: { held_content: 'I will call my lawyer about the refund', guardrail: 'threats' } });
    expect(llmInputs(d)).toEqual([]);
    expect(d.feed({ type: 'human_resolved', commandId: esc.id, resolution: { decision: 'approved' } })).toEqual(['You said: I will call my lawyer about the refund']);
  });

  test('rejected, the message is dropped', () => {
    const d = agent(G);
    d.start();
    d.send('I will sue you');
    const esc = d.open.find((c) => c.type === 'escalate') as RuntimeCommand;
    expect(d.feed({ type: 'human_resolved', commandId: esc.id, resolution: { decision: 'rejected' } })).toEqual([]);
    expect(llmInputs(d)).toEqual([]);
    expect(d.send('ok then')).toEqual(['You said: ok then']);
  });
});

describe('escalate on a tool call', () => {
  test('the call waits for a person; approved, it is made with its arguments', () => {
    const compiled = compileProject(agentProject(`TOOLS:
  refund(amount: number) -> {id: string}
    description: "Refund"
GUARDRAILS:
  big_refunds:
    kind: tool_input
    check: args.amount < 1000
    action: escalate
FLOW:
  ask:
    REASONING: false
    GATHER:
      - amount: required
        type: number
        prompt: "Amount?"
    CALL: refund
      WITH:
        amount: amount
    ON_SUCCESS:
      RESPOND: "Refund {{result.id}} done."
`));
    expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
    const d = new Driver(scripted({ tools: { refund: (_args, id) => toolOk(id, { id: 'RF-9' }) } }), compiled);
    d.start();
    d.send('5000');
    const esc = d.open.find((c) => c.type === 'escalate') as Extract<RuntimeCommand, { type: 'escalate' }>;
    expect(esc.context).toMatchObject({ held_content: { amount: 5000 }, guardrail: 'big_refunds' });
    expect(d.commands.some((c) => c.type === 'call_tool')).toBe(false);
    expect(d.feed({ type: 'human_resolved', commandId: esc.id, resolution: { decision: 'approved' } })).toEqual(['Refund RF-9 done.']);
  });
});

describe('llm_check', () => {
  const G = '  no_promises:\n    kind: output\n    llm_check: "The reply promises no refund."\n    action: block\n    message: "Let me check that with the team."\n';

  /** The model writes `reply`; as a judge it says whether the text promises a refund (or answers as the offline model). */
  function judged(reply: string, judge: (system: string, text: string) => string, options = {}): Driver {
    const compiled = compileProject(agentProject(`GUARDRAILS:\n${G}`));
    expect(compiled.diagnostics).toEqual([]);
    return new Driver((cmd) => {
      if (cmd.type !== 'call_llm') return undefined;
      const [system, user] = cmd.request.messages;
      return llmText(cmd.id, cmd.purpose === 'validation' ? judge(String(system?.content), String(user?.content)) : reply);
    }, compiled, undefined, options);
  }
  const strict = (_: string, text: string) => JSON.stringify({ valid: !/refund/i.test(text), reason: 'checked' });

  test('the model judges each reply; one it finds breaking the rule is blocked', () => {
    const d = judged('You will get a full refund tomorrow.', strict);
    d.start();
    expect(d.send('money back?')).toEqual(['Let me check that with the team.']);
    const judge = d.commands.find((c): c is Extract<RuntimeCommand, { type: 'call_llm' }> => c.type === 'call_llm' && c.purpose === 'validation');
    expect(judge?.request.messages[0]?.content).toContain('The reply promises no refund.');
    expect(d.traceOf('guardrail_eval')).toEqual([{ guardrail: 'no_promises', kind: 'output', passed: false, action: 'block', agent: 'A' }]);
  });

  test('the offline model accepts; an unreadable verdict passes with an llm_check_error; old runs never judge', () => {
    const offline = judged('You will get a full refund.', (system) => localValidationAnswer(system) ?? 'no');
    offline.start();
    expect(offline.send('money back?')).toEqual(['You will get a full refund.']);
    const broken = judged('You will get a full refund.', () => 'not json');
    broken.start();
    expect(broken.send('money back?')).toEqual(['You will get a full refund.']);
    expect(broken.traceOf('error').map((e) => e.kind)).toContain('llm_check_error');
    const old = judged('You will get a full refund.', strict, { guardrailActions: false });
    old.start();
    expect(old.send('money back?')).toEqual(['You will get a full refund.']);
    expect(old.commands.some((c) => c.type === 'call_llm' && c.purpose === 'validation')).toBe(false);
  });
});

describe('compile checks', () => {
  const errors = (body: string): string[] => compileAgentBody(body).diagnostics.map((x) => `${x.code} ${x.message}`);

  test('the actions compile without a warning; the settings they need are checked', () => {
    expect(errors('GUARDRAILS:\n  g:\n    kind: output\n    check: length(output) < 2000\n    action: fix\n')).toEqual([]);
    expect(compileAgentBody('GUARDRAILS:\n  g:\n    kind: output\n    check: length(output) < 2000\n    action: fix\n').agents.A?.guardrails[0]?.fix).toEqual({ strategy: 'truncate', max_length: 1999, expression: null });
    expect(errors('GUARDRAILS:\n  g:\n    kind: output\n    check: word_count(output) < 200\n    action: fix\n')).toEqual([
      expect.stringMatching(/^E852 .*action fix needs fix_strategy \(truncate, strip_html, redact_pii, normalize, custom\)/),
    ]);
    expect(errors('GUARDRAILS:\n  g:\n    kind: output\n    check: length(output) < 20\n    action: filter\n')).toEqual([expect.stringMatching(/^E852 .*use block, or fix with a fix_strategy/)]);
    expect(errors('GUARDRAILS:\n  g:\n    kind: input\n    check: length(input) < 20\n    action: block\n    max_reasks: 3\n')).toEqual([expect.stringMatching(/^E852 .*max_reasks belongs to action: reask/)]);
    expect(errors('GUARDRAILS:\n  g:\n    kind: input\n    check: length(input) < 20\n    action: fix\n    fix_strategy: custom\n')).toEqual([expect.stringMatching(/^E852 .*custom needs fix_expression/)]);
  });
});

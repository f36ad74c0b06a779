// Rule checkpoints: tool_input / tool_output / handoff guardrails and `BEFORE returning results`
// constraints, and that `ruleCheckpoints: false` (runs recorded before them) keeps the old path.

import { compileProject, type CompilationOutput, type Json, type ProjectFile } from '../../../abl';
import type { RuntimeEvent } from '../../../abl/runtime';
import { Driver, llmCall, llmText, scripted, toolOk } from './driver';

const TOOL = `
TOOLS:
  lookup(q: string) -> {answer: string}
    type: sandbox
    runtime: javascript
    code: |
      function main(p) { return { answer: p.q }; }
`;

const CLERK = `AGENT: Clerk
GOAL: "Answer questions with lookup."
${TOOL}
HANDOFF:
  - TO: Vault
    WHEN: intent == "vault"
    CONTEXT:
      pass: [account]
      summary: "Vault request for {{account}}"
    RETURN: false
  - TO: Vault
    WHEN: user wants the vault
    RETURN: false
  - TO: Desk
    WHEN: intent == "desk"
    CONTEXT:
      pass: [account]
      summary: "Desk request for {{account}}"
    RETURN: false

CONSTRAINTS:
  - REQUIRE verified == true BEFORE returning results
    ON_FAIL: "Please verify your identity before I share results."

GUARDRAILS:
  no_secret_args:
    kind: tool_input
    check: not_matches_pattern(input, "secret")
    action: block
    message: "I can't send secrets to {{tool}}."
  no_cards_in_args:
    kind: tool_input
    check: not_matches_pattern(input, "\\\\d{4}-\\\\d{4}")
    action: redact
  long_args:
    kind: tool_input
    check: length(input) < 40
    action: warn
  no_internal_results:
    kind: tool_output
    check: not_matches_pattern(output, "INTERNAL")
    action: block
    message: "That result is not for sharing."
  no_emails_in_results:
    kind: tool_output
    check: not_matches_pattern(output, "[a-z]+@[a-z]+\\\\.com")
    action: redact
  vault_closed:
    kind: handoff
    check: target != "Vault"
    action: block
    message: "The vault is closed today."
  no_account_numbers_out:
    kind: handoff
    check: not_matches_pattern(input, "ACC-\\\\d+")
    action: redact
`;

const SIMPLE = (name: string) => `AGENT: ${name}
GOAL: "Help."
ON_START:
  RESPOND: "${name} here."
`;

const FLOW = `AGENT: Flow_Clerk
GOAL: "Look things up step by step."
${TOOL}
GUARDRAILS:
  no_secret_args:
    kind: tool_input
    check: not_matches_pattern(input, "secret")
    action: block
    message: "Not with secrets."
FLOW:
  steps: [ask, look, done]
  ask:
    REASONING: false
    GATHER:
      - q: required
        prompt: "What should I look up?"
    THEN: look
  look:
    REASONING: false
    CALL: lookup
      WITH:
        q: q
      AS: found
    ON_SUCCESS:
      THEN: done
    ON_FAIL:
      RESPOND: "Lookup failed."
      THEN: done
  done:
    REASONING: false
    RESPOND: "Found {{found.answer}}."
`;

function project(): CompilationOutput {
  const files: ProjectFile[] = [
    { path: 'agents/Clerk.agent.abl', content: CLERK },
    { path: 'agents/Vault.agent.abl', content: SIMPLE('Vault') },
    { path: 'agents/Desk.agent.abl', content: SIMPLE('Desk') },
    { path: 'agents/Flow_Clerk.agent.abl', content: FLOW },
  ];
  const compiled = compileProject(files);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return compiled;
}

/** A Clerk session; `llm` answers the n-th LLM call, `lookup` the tool. */
function clerk(
  llm: (id: string, n: number) => RuntimeEvent,
  lookup: (args: Record<string, Json>) => Json = (a) => ({ answer: String(a.q) }),
  ruleCheckpoints?: boolean,
  parallelToolCalls?: boolean,
): Driver {
  let n = 0;
  const compiled = { ...project(), entry_agent: 'Clerk' };
  return new Driver(
    scripted({ llm: (cmd) => llm(cmd.id, n++), tools: { lookup: (a, id) => toolOk(id, lookup(a)) } }),
    compiled,
    1_700_000_000_000,
    { ...(ruleCheckpoints === undefined ? {} : { ruleCheckpoints }), ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }) },
  );
}

/** An LLM answer asking for `lookup` once per query, all in one answer. */
function lookups(id: string, ...queries: string[]): RuntimeEvent {
  return {
    type: 'llm_result', commandId: id, ok: true, content: '',
    toolCalls: queries.map((q, i) => ({ id: `call-${i}`, name: 'lookup', arguments: JSON.stringify({ q }) })),
  };
}

const verified = { type: 'start', sessionVariables: { verified: true, account: 'ACC-991' } } as const;

describe('tool_input guardrails', () => {
  test('block: the tool is not called, the message is the reply and the reasoning loop stops', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'my secret plan' }) : llmText(id, 'should not be said')));
    d.start(verified);
    expect(d.send('look up my plan')).toEqual(["I can't send secrets to lookup."]);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toEqual([]);
    expect(d.commands.filter((c) => c.type === 'call_llm')).toHaveLength(1);
    expect(d.traceOf('guardrail_eval').find((g) => g.guardrail === 'no_secret_args')).toEqual({ guardrail: 'no_secret_args', kind: 'tool_input', passed: false, action: 'block', agent: 'Clerk' });
    // The LLM's tool call still gets its answer in the history.
    const clerkThread = d.state.threads.find((t) => t.agent === 'Clerk');
    expect(clerkThread?.history.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('blocked by a guardrail') });
    expect(d.traceOf('error')).toEqual([]);
  });

  test("after a block the answer's other calls are answered but not run", () => {
    const two: RuntimeEvent[] = [];
    const d = clerk((id, n) => {
      if (n > 0) return llmText(id, 'should not be said');
      const ev: RuntimeEvent = {
        type: 'llm_result', commandId: id, ok: true, content: '',
        toolCalls: [{ id: 'a', name: 'lookup', arguments: '{"q":"secret"}' }, { id: 'b', name: 'lookup', arguments: '{"q":"fine"}' }],
      };
      two.push(ev);
      return ev;
    });
    d.start(verified);
    expect(d.send('two lookups')).toEqual(["I can't send secrets to lookup."]);
    expect(two).toHaveLength(1);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toEqual([]);
    const history = d.state.threads.find((t) => t.agent === 'Clerk')?.history ?? [];
    expect(history.filter((t) => t.role === 'tool').map((t) => [t.toolCallId, t.content.includes('blocked')])).toEqual([['a', true], ['b', true]]);
  });

  test('the next LLM request has the blocked call answered right after the call', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'my secret plan' }) : llmText(id, 'Sure.')));
    d.start(verified);
    d.send('look up my plan');
    d.send('ok, anything else?');
    const next = d.commands.filter((c) => c.type === 'call_llm')[1];
    const messages = next?.type === 'call_llm' ? next.request.messages : [];
    const at = messages.findIndex((m) => m.toolCalls?.length);
    expect(messages.slice(at + 1).map((m) => m.role)).toEqual(['tool', 'assistant', 'user']);
    expect(messages[at + 1]).toMatchObject({ toolCallId: 'tc-c1' });
    expect(messages[at + 2]?.content).toBe("I can't send secrets to lookup.");
  });

  test('redact rewrites the arguments before the call; warn only records', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'card 1234-5678 for the quarterly billing statement' }) : llmText(id, 'Done.')));
    d.start(verified);
    expect(d.send('look it up')).toEqual(['Done.']);
    const call = d.commands.find((c) => c.type === 'call_tool');
    expect(call?.type === 'call_tool' && call.args).toEqual({ q: 'card [REDACTED] for the quarterly billing statement' });
    const evals = d.traceOf('guardrail_eval').filter((g) => g.kind === 'tool_input');
    expect(evals.map((g) => [g.guardrail, g.passed, g.action])).toEqual([
      ['no_secret_args', true, 'block'],
      ['no_cards_in_args', false, 'redact'],
      ['long_args', false, 'warn'],
    ]);
    // The LLM's own history (sent back to it, kept in the session state) loses the number too.
    const next = d.commands.filter((c) => c.type === 'call_llm')[1];
    expect(JSON.stringify(next)).not.toContain('1234-5678');
    expect(JSON.stringify(d.state)).not.toContain('1234-5678');
    const asked = d.state.threads.find((t) => t.agent === 'Clerk')?.history.find((t) => t.toolCalls?.length);
    expect(asked?.toolCalls?.[0]?.arguments).toBe(JSON.stringify({ q: 'card [REDACTED] for the quarterly billing statement' }));
  });

  test('in a flow a blocked CALL sends the message and stays on the step', () => {
    const compiled = { ...project(), entry_agent: 'Flow_Clerk' };
    const d = new Driver(scripted({ tools: { lookup: (a, id) => toolOk(id, { answer: String(a.q) }) } }), compiled);
    expect(d.start()).toEqual(['What should I look up?']);
    expect(d.send('q: top secret')).toEqual(['Not with secrets.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toEqual([]);
    expect(d.state.threads[0]?.flow?.step).toBe('look');
    expect(d.traceOf('guardrail_eval')).toContainEqual({ guardrail: 'no_secret_args', kind: 'tool_input', passed: false, action: 'block', agent: 'Flow_Clerk' });
  });
});

describe('tool_input guardrails on calls run in parallel', () => {
  test("a blocked call stops the batch: the calls after it are answered, not run", () => {
    const d = clerk((id, n) => (n === 0 ? lookups(id, 'secret', 'fine') : llmText(id, 'should not be said')), undefined, undefined, true);
    d.start(verified);
    expect(d.send('two lookups')).toEqual(["I can't send secrets to lookup."]);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toEqual([]);
    const history = d.state.threads.find((t) => t.agent === 'Clerk')?.history ?? [];
    expect(history.filter((t) => t.role === 'tool').map((t) => [t.toolCallId, t.content.includes('blocked')])).toEqual([['call-0', true], ['call-1', true]]);
    // Only the first call was judged.
    expect(d.traceOf('guardrail_eval').filter((g) => g.guardrail === 'no_secret_args')).toHaveLength(1);
  });

  test('each call is judged once, when the batch is issued, and runs with its redacted arguments', () => {
    const d = clerk((id, n) => (n === 0 ? lookups(id, 'card 1234-5678', 'weather') : llmText(id, 'Done.')), undefined, undefined, true);
    d.start(verified);
    expect(d.send('two lookups')).toEqual(['Done.']);
    const calls = d.commands.filter((c) => c.type === 'call_tool');
    expect(calls.map((c) => c.type === 'call_tool' && c.args)).toEqual([{ q: 'card [REDACTED]' }, { q: 'weather' }]);
    expect(JSON.stringify(d.state)).not.toContain('1234-5678');
    // Three tool_input guardrails per call, not again when the results are bound.
    expect(d.traceOf('guardrail_eval').filter((g) => g.kind === 'tool_input')).toHaveLength(6);
  });
});

describe('tool_output guardrails', () => {
  test('block: the agent never sees the result', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'x' }) : llmText(id, 'should not be said')), () => ({ answer: 'INTERNAL only' }));
    d.start(verified);
    expect(d.send('look it up')).toEqual(['That result is not for sharing.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toHaveLength(1);
    expect(d.commands.filter((c) => c.type === 'call_llm')).toHaveLength(1);
    expect(JSON.stringify(d.state)).not.toContain('INTERNAL only');
    expect(d.traceOf('guardrail_eval').find((g) => g.guardrail === 'no_internal_results')).toMatchObject({ kind: 'tool_output', passed: false, action: 'block' });
    // The workflow is told to withhold the result it recorded for that call.
    const call = d.commands.find((c) => c.type === 'call_tool')!;
    expect(d.traceOf('tool_output_guarded')).toEqual([{ commandId: call.id, output: null, blocked: true }]);
  });

  test('redact: the LLM and the variables get the redacted result', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'x' }) : llmText(id, 'Done.')), () => ({ answer: 'write to ann@example.com' }));
    d.start(verified);
    expect(d.send('look it up')).toEqual(['Done.']);
    const second = d.commands.filter((c) => c.type === 'call_llm')[1];
    expect(JSON.stringify(second)).toContain('write to [REDACTED]');
    expect(JSON.stringify(second)).not.toContain('ann@example.com');
    expect(d.vars().last_lookup_result).toEqual({ answer: 'write to [REDACTED]' });
    const call = d.commands.find((c) => c.type === 'call_tool')!;
    expect(d.traceOf('tool_output_guarded')).toEqual([{ commandId: call.id, output: { answer: 'write to [REDACTED]' }, blocked: false }]);
  });

  test('a result the guardrails leave alone is not rewritten', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'x' }) : llmText(id, 'Done.')), () => ({ answer: 'plain' }));
    d.start(verified);
    expect(d.send('look it up')).toEqual(['Done.']);
    expect(d.traceOf('tool_output_guarded')).toEqual([]);
  });
});

describe('handoff guardrails', () => {
  test('block on an expression handoff: no switch, the message is the reply', () => {
    const d = clerk((id) => llmText(id, 'never'));
    d.start(verified);
    expect(d.send('open the vault', { intent: 'vault' })).toEqual(['The vault is closed today.']);
    expect(d.active()).toBe('Clerk');
    expect(d.state.handoffCount).toBe(0);
    expect(d.traceOf('handoff')).toEqual([]);
    expect(d.traceOf('guardrail_eval').filter((g) => g.kind === 'handoff')).toEqual([
      { guardrail: 'vault_closed', kind: 'handoff', passed: false, action: 'block', agent: 'Clerk' },
    ]);
  });

  test('block on an LLM handoff tool: no switch and no further LLM call', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'handoff_to_Vault', { reason: 'wants the vault' }) : llmText(id, 'should not be said')));
    d.start(verified);
    expect(d.send('take me to the vault')).toEqual(['The vault is closed today.']);
    expect(d.active()).toBe('Clerk');
    expect(d.commands.filter((c) => c.type === 'call_llm')).toHaveLength(1);
  });

  test('an allowed handoff passes, with the redaction applied to what the target receives', () => {
    const d = clerk((id) => llmText(id, 'How can I help?'));
    d.start(verified);
    expect(d.send('desk please', { intent: 'desk' })).toEqual(['Desk here.', 'How can I help?']);
    expect(d.active()).toBe('Desk');
    expect(d.vars('Desk')).toMatchObject({ account: '[REDACTED]', _handoff_summary: 'Desk request for [REDACTED]' });
    expect(JSON.stringify(d.state.threads.find((t) => t.agent === 'Desk'))).not.toContain('ACC-991');
    expect(d.traceOf('guardrail_eval').filter((g) => g.kind === 'handoff').map((g) => [g.guardrail, g.passed])).toEqual([
      ['vault_closed', true],
      ['no_account_numbers_out', false],
    ]);
  });
});

describe('BEFORE returning results', () => {
  test('a failing constraint replaces the reply with its ON_FAIL message', () => {
    const d = clerk((id) => llmText(id, 'Your balance is 42.'));
    d.start({ type: 'start', sessionVariables: { verified: false } });
    expect(d.send('what is my balance?')).toEqual(['Please verify your identity before I share results.']);
    expect(d.traceOf('decision')).toContainEqual({ decisionKind: 'constraint', decision: 'blocked return results: REQUIRE verified == true', agent: 'Clerk' });
    expect(JSON.stringify(d.state)).not.toContain('balance is 42');
  });

  test('refusals are not held back: a guardrail block message still goes out', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'my secret plan' }) : llmText(id, 'never')));
    d.start({ type: 'start', sessionVariables: { verified: false } });
    expect(d.send('look up my plan')).toEqual(["I can't send secrets to lookup."]);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'constraint')).toEqual([]);
  });

  test('the reply goes out once the constraint holds', () => {
    const d = clerk((id) => llmText(id, 'Your balance is 42.'));
    d.start(verified);
    expect(d.send('what is my balance?')).toEqual(['Your balance is 42.']);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'constraint')).toEqual([]);
  });
});

describe('runs recorded before the checkpoints (ruleCheckpoints: false)', () => {
  test('tool guardrails and BEFORE returning results are skipped', () => {
    const d = clerk((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'my secret plan' }) : llmText(id, 'Your plan: secret.')), undefined, false);
    d.start({ type: 'start', sessionVariables: { verified: false } });
    expect(d.send('look up my plan')).toEqual(['Your plan: secret.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toHaveLength(1);
    expect(d.traceOf('guardrail_eval').filter((g) => g.kind !== 'input' && g.kind !== 'output')).toEqual([]);
  });

  test('handoff guardrails are skipped', () => {
    const d = clerk((id) => llmText(id, 'How can I help?'), undefined, false);
    d.start(verified);
    expect(d.send('open the vault', { intent: 'vault' })).toEqual(['Vault here.', 'How can I help?']);
    expect(d.active()).toBe('Vault');
  });
});

// The corpus under test/fixtures/abl-corpus: every documented form the compiler reads compiles with
// no error and exactly the expected warnings, and the YAML spelling of an agent gives the ABL IR.

import { join } from 'node:path';
import { compileProject, type CompilationOutput } from '../../../abl';
import { looksLikeYamlAgent } from '../../../abl/yaml';
import { readProject } from './helpers';

const CORPUS = join(__dirname, '../../fixtures/abl-corpus');

/** The IR without what differs by spelling alone: locations, the file name and its hash. */
function spellingFree(out: CompilationOutput): unknown {
  return JSON.parse(JSON.stringify(out.agents, (k, v: unknown) => (k === 'loc' || k === 'file' || k === 'source_hash' ? undefined : v)));
}

describe('ABL corpus', () => {
  const out = compileProject(readProject(join(CORPUS, 'forms')));

  it('compiles every file with no error and exactly the expected warnings', () => {
    expect(out.diagnostics.map((d) => `${d.code} ${d.path}:${d.line}:${d.column}`)).toEqual([
      'W410 agents/Delegate_Returns.agent.abl:10:16', // Reward is not declared
      'W859 agents/Escalate_Routing.agent.abl:7:5', // skill_tags: nothing matches people by them
      'W859 agents/Escalate_Routing.agent.abl:15:9', // skills: the same, on a trigger
      'W311 agents/Quoted_Values.agent.abl:18:18', // formula: "amount * 2"
      'W802 agents/Remember_Rules.agent.abl:18:7', // - ON_START: "…" (run: it is session:start)
      'W802 agents/Remember_Rules.agent.abl:19:7', // - ON_SESSION_END: "…"
      'W806 agents/Remember_Rules.agent.abl:19:7', // … and session:end triggers no recall
      'W603 agents/Respond_Forms.agent.abl:7:5', // the thanks template's MARKDOWN variant is never sent
      'W510 agents/Respond_Forms.agent.abl:13:7', // VOICE instructions: no realtime speech model speaks them
      'W603 agents/Respond_Forms.agent.abl:19:7', // RESPOND's MARKDOWN variant, the same
      'W410 agents/Yaml_Desk.agent.yaml:7:5', // Reward[] in a YAML returns map
      'W419 tools/payments.tools.abl:10:5', // auth: saml adds no credential
    ]);
    expect(out.ok).toBe(true);
    expect(Object.keys(out.agents).sort()).toEqual([
      'Constraint_Rules', 'Delegate_Returns', 'Escalate_Routing', 'Expression_Forms', 'Front_Desk', 'Guardrail_Helpers', 'Quoted_Values',
      'Remember_Rules', 'Respond_Forms', 'Rewards_Lookup', 'Yaml_Desk',
    ]);
  });

  it('keeps what each form means', () => {
    const a = out.agents;
    expect(a.Front_Desk?.coordination.handoffs.map((h) => h.on_return_action)).toEqual([
      { kind: 'continue' },
      { kind: 'resume_intent' },
      { kind: 'step', step: 'check_additional_needs' },
      { kind: 'step', step: 'wrap_up' },
      { kind: 'instruction', text: 'Ask whether the guest needs anything else, then summarise.' },
    ]);
    const pay = a.Quoted_Values?.flow?.steps.pay;
    expect(pay?.call?.with.currency?.ast).toEqual({ type: 'Literal', value: 'USD', pos: 0 });
    expect(pay?.call?.with.note?.ast).toEqual({ type: 'Literal', value: 'single quotes are strings too', pos: 0 });
    expect(pay?.call?.with.metadata?.ast?.type).toBe('Map');
    expect(pay?.when?.ast?.type).toBe('Binary');
    expect(pay?.on_result[0]?.condition.kind).toBe('expr');
    expect(a.Constraint_Rules?.constraints.map((c) => c.on_fail.kind)).toEqual(['message', 'message', 'escalate', 'handoff', 'block', 'recover']);
    expect(a.Constraint_Rules?.constraints[1]?.on_fail).toEqual({ kind: 'message', message: 'Refunds over 500 need a manager, {{customer_name}}.' });
    expect(a.Remember_Rules?.memory.remember.map((r) => r.when?.src)).toEqual(['booking.confirmed == true', 'booking.confirmed']);
    expect(a.Respond_Forms?.flow?.steps.ask?.respond).toBe('How was your stay?');
    expect(a.Delegate_Returns?.coordination.delegates[0]?.returns).toEqual({ rewards: 'rewards', points: 'points', summary: 'summary', tier: 'member_tier' });
    expect(a.Escalate_Routing?.coordination.escalation?.routing).toEqual({ queue: 'rewards_tier2', skills: ['loyalty', 'billing'], priority_boost: 1, extra: {} });
    expect(a.Escalate_Routing?.coordination.escalation?.triggers[0]?.routing).toEqual({ queue: 'fraud_review', skills: ['fraud'], priority_boost: 3, extra: {} });
    expect(a.Guardrail_Helpers?.guardrails.map((g) => g.check?.src)).toEqual(['sentence_count(output) <= 4', 'NOT contains_url(output) AND NOT contains_email(output)']);
    expect(a.Expression_Forms?.completion.map((c) => c.when.ast?.type)).toEqual(['Binary', 'Unary', 'Binary']);
    expect(pay?.call?.with.extra?.ast?.type).toBe('Map');
    expect(out.tool_libraries['tools/payments.tools.abl']?.tools.map((t) => [t.name, t.returns.kind, t.binding.type === 'http' ? t.binding.auth : null])).toEqual([
      ['charge', 'object', 'saml'],
      ['refund', 'object', 'oauth2_user'],
    ]);
    expect(a.Yaml_Desk?.tools.map((t) => t.name)).toEqual(['refund', 'lookup_member']);
  });

  it('compiles the ABL and the YAML spelling of one agent to the same IR', () => {
    const files = readProject(join(CORPUS, 'yaml-pair'));
    const abl = compileProject(files.filter((f) => f.path.endsWith('.abl')));
    const yaml = compileProject(files.filter((f) => f.path.endsWith('.yaml')));
    expect(abl.diagnostics.map((d) => d.code)).toEqual(['W410', 'W419']);
    expect(yaml.diagnostics.map((d) => d.code)).toEqual(['W410', 'W419']);
    expect(Object.keys(yaml.agents)).toEqual(['Booking_Agent']);
    expect(spellingFree(yaml)).toEqual(spellingFree(abl));
    expect(yaml.agents.Booking_Agent?.metadata.file).toBe('agents/Booking_Agent.agent.yaml');
  });
});

describe('YAML agent format errors', () => {
  const compileYaml = (content: string): CompilationOutput => compileProject([{ path: 'agents/Y.agent.yaml', content }]);

  it('reports a YAML syntax error as E111 with its position', () => {
    const out = compileYaml('agent: Y\ngoal: "g"\nflow:\n  a: [1, 2\n');
    expect(out.diagnostics[0]).toMatchObject({ code: 'E111', path: 'agents/Y.agent.yaml', line: 5 });
    expect(out.ok).toBe(false);
  });

  it('a document that is not a map is E111', () => {
    expect(compileYaml('- agent: Y\n').diagnostics.map((d) => [d.code, d.line, d.column])).toEqual([['E111', 1, 1], ['W706', 1, 1]]);
  });

  it('a tool without a name is E111; name: + kind: supervisor is a supervisor', () => {
    expect(compileYaml('agent: Y\ngoal: "g"\ntools:\n  - description: "x"\n    type: http\n    endpoint: "https://x.example.com"\n').diagnostics.map((d) => d.code)).toContain('E111');
    const out = compileYaml('name: Y\nkind: supervisor\ngoal: "g"\n');
    expect(out.diagnostics).toEqual([]);
    expect(out.agents.Y?.metadata.kind).toBe('supervisor');
  });
});

describe('telling a stored YAML agent from ABL', () => {
  it('reads the first key after blank lines, comments and a --- marker', () => {
    expect(looksLikeYamlAgent('\r\n  # a comment\n---\n  agent: Y\ngoal: g\n')).toBe(true);
    expect(looksLikeYamlAgent('name : Y')).toBe(true);
    expect(looksLikeYamlAgent('kind:supervisor')).toBe(true);
    expect(looksLikeYamlAgent('AGENT: Y\nagent: y\n')).toBe(false);
    expect(looksLikeYamlAgent('# only a comment\n\n---\n')).toBe(false);
    expect(looksLikeYamlAgent('')).toBe(false);
  });
});

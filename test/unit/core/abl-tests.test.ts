// Scenario tests for agents: the file schema and its errors, the expectation matchers, the offline
// judge, and the CLI over the seeded examples (all pass) and a fixture with a failing scenario.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkExpect, containsDeep, type Judge, type Observation } from '../../../core/abl-tests/expect';
import { createJudge, nextPersonaMessage, offlineVerdict, parseVerdict } from '../../../core/abl-tests/judge';
import type { LlmProvider, LlmRequest } from '../../../providers/llm';
import { formatScenarioError, parseScenarioFile } from '../../../core/abl-tests/schema';
import { runAblTestCli } from '../../../infra/abl-test';
import { checkImportFiles } from '../../../core/project-io/import-plan';
import { loadScenarioProject } from '../../../core/abl-tests/files';
import { platformModelResolver } from '../../../core/abl-tests/models';
import { runScenarioFiles } from '../../../core/abl-tests/runner';

const ROOT = path.join(__dirname, '../../..');

describe('scenario file schema', () => {
  it('resolves the agent from the file name, personas by name and file-level mocks after the own', () => {
    const parsed = parseScenarioFile(
      'agents/Billing_Agent.scenarios.yaml',
      [
        'personas:',
        '  - { name: Terse, goals: ["no"] }',
        'toolMocks:',
        '  - { tool: get_invoice, error: down }',
        'scenarios:',
        '  - name: scripted',
        '    toolMocks: [{ tool: get_invoice, response: { id: 1 } }]',
        '    turns: [{ user: hi }]',
        '  - name: driven',
        '    agent: Support_Hub',
        '    persona: Terse',
        '    initialMessage: hello',
      ].join('\n'),
    );
    if (!parsed.ok) throw new Error(parsed.errors.map(formatScenarioError).join('\n'));
    const [scripted, driven] = parsed.file.scenarios;
    expect(parsed.file.agent).toBe('Billing_Agent');
    expect(scripted).toMatchObject({ agent: 'Billing_Agent', driver: 'script', persona: null });
    expect(scripted!.toolMocks).toEqual([{ tool: 'get_invoice', response: { id: 1 } }, { tool: 'get_invoice', error: 'down' }]);
    expect(driven).toMatchObject({ agent: 'Support_Hub', driver: 'persona', persona: { name: 'Terse', goals: ['no'] } });
  });

  it('reports each problem with its file, scenario, path and line', () => {
    const parsed = parseScenarioFile(
      'agents/A.scenarios.yaml',
      [
        'scenarios:',
        '  - name: first',
        '    turns:',
        '      - user: hi',
        '        expect:',
        '          response: { regex: "(" }',
        '          colour: red',
        '  - name: second',
        '    persona: Nobody',
        '    initialMessage: hi',
        '  - name: first',
        '    turns: []',
      ].join('\n'),
    );
    expect(parsed.ok).toBe(false);
    const errors = parsed.ok ? [] : parsed.errors;
    expect(errors.map(formatScenarioError)).toEqual(
      expect.arrayContaining([
        'agents/A.scenarios.yaml:6: scenario "first": scenarios[0].turns[0].expect.response.regex: not a valid regular expression: Invalid regular expression: /(/: Unterminated group',
        expect.stringMatching(/^agents\/A\.scenarios\.yaml:7: scenario "first": scenarios\[0\]\.turns\[0\]\.expect: Unrecognized key: "colour"/),
        'agents/A.scenarios.yaml:9: scenario "second": scenarios[1].persona: no persona named "Nobody" in personas',
        expect.stringMatching(/^agents\/A\.scenarios\.yaml:12: scenario "first": scenarios\[2\]\.turns: /),
        'agents/A.scenarios.yaml:11: scenario "first": scenarios[2].name: duplicate scenario name "first"',
      ]),
    );
  });

  it('refuses a file with no agent, broken YAML, and a persona-driven scenario without its first message', () => {
    const noAgent = parseScenarioFile('misc.yaml', 'scenarios: [{ name: x, turns: [{ user: hi }] }]');
    expect(noAgent.ok ? [] : noAgent.errors.map((e) => e.message)).toEqual(['name the agent (agent:), or name the file <Agent>.scenarios.yaml']);
    const broken = parseScenarioFile('agents/A.scenarios.yaml', 'scenarios:\n  - name: [\n');
    expect(broken.ok ? null : broken.errors[0]?.message).toMatch(/^YAML: /);
    const driven = parseScenarioFile('agents/A.scenarios.yaml', { scenarios: [{ name: 'x', driver: 'persona', persona: { name: 'P' } }] });
    expect(driven.ok ? [] : driven.errors.map((e) => `${e.path}: ${e.message}`)).toEqual(['scenarios[0].initialMessage: a persona-driven scenario needs initialMessage']);
  });
});

describe('project import', () => {
  it('takes scenario files beside the agents, checks them and does not store them', () => {
    const agent = 'AGENT: Helper\nGOAL: "Help"\n';
    const checked = checkImportFiles({ 'agents/Helper.abl': agent, 'agents/Helper.scenarios.yaml': 'scenarios:\n  - name: hi\n    turns: [{ user: hi }]\n' });
    expect(checked.agents.map((a) => a.name)).toEqual(['Helper']);
    expect(() => checkImportFiles({ 'agents/Helper.abl': agent, 'agents/Helper.scenarios.yaml': 'scenarios:\n  - name: hi\n' })).toThrow(
      'files.agents/Helper.scenarios.yaml:2: scenario "hi": scenarios[0].turns: a scripted scenario needs turns',
    );
  });
});

describe('expectation matchers', () => {
  const seen: Observation = {
    response: 'INV-1: $40.00, paid. Want a refund?',
    agent: 'Billing_Agent',
    status: 'active',
    variables: { invoice: { id: 'INV-1', amount: 40, lines: [1, 2] }, customer_id: 'C-7' },
    agentPath: ['Support_Hub', 'Billing_Agent'],
    events: [
      { type: 'handoff', data: { fromAgent: 'Support_Hub', toAgent: 'Billing_Agent', reason: 'r' } },
      { type: 'tool_call', data: { agent: 'Billing_Agent', tool: 'get_invoice', input: { invoice_id: 'INV-1', verbose: true } } },
      { type: 'tool_call', data: { agent: 'Billing_Agent', tool: 'log', input: {} } },
    ],
  };
  const judge: Judge = async ({ rubric, response }) => offlineVerdict(rubric, response);
  const failed = async (expect: Parameters<typeof checkExpect>[0]) => (await checkExpect(expect, seen, judge)).filter((r) => !r.passed).map((r) => `${r.expectation}: ${r.message}`);

  it('passes what holds', async () => {
    expect(
      await failed({
        response: { equals: seen.response, contains: ['$40.00', 'refund'], notContains: 'declined', regex: '^INV-\\d+:', judge: 'Says the invoice is "paid"' },
        agent: 'Billing_Agent',
        status: 'active',
        agentPath: ['Support_Hub', 'Billing_Agent'],
        handoffs: [{ from: 'Support_Hub', to: 'Billing_Agent' }],
        toolCalls: [{ tool: 'get_invoice', args: { invoice_id: 'INV-1' }, argsMatch: { invoice_id: '^INV-' } }, 'log'],
        notCalled: ['issue_refund'],
        state: { invoice: { amount: 40, lines: [1, 2] }, customer_id: 'C-7' },
        events: [{ type: 'handoff' }, { type: 'tool_call', data: { tool: 'log' } }],
      }),
    ).toEqual([]);
  });

  it('fails what does not, saying what came instead', async () => {
    expect(
      await failed({
        response: { contains: 'refunded', regex: 'declined$', judge: 'Mentions "a manager"' },
        agent: 'Support_Hub',
        handoffs: [],
        toolCalls: [{ tool: 'get_invoice', args: { invoice_id: 'INV-2' } }, 'log', 'get_invoice'],
        notCalled: ['log'],
        state: { invoice: { lines: [1] } },
        events: [{ type: 'tool_call', data: { tool: 'log' } }, { type: 'handoff' }],
      }),
    ).toEqual([
      'response.contains "refunded": got "INV-1: $40.00, paid. Want a refund?"',
      'response.regex /declined$/: got "INV-1: $40.00, paid. Want a refund?"',
      'response.judge "Mentions \\"a manager\\"": offline judge: the response lacks "a manager"; got "INV-1: $40.00, paid. Want a refund?"',
      'agent Support_Hub: the active agent is Billing_Agent',
      'no handoff: handoffs were: Support_Hub → Billing_Agent',
      'toolCalls get_invoice with {"invoice_id":"INV-2"}: tools called: get_invoice({"invoice_id":"INV-1","verbose":true}), log({})',
      'notCalled log: tools called: get_invoice({"invoice_id":"INV-1","verbose":true}), log({})',
      'state.invoice = {"lines":[1]}: state.invoice is {"id":"INV-1","amount":40,"lines":[1,2]}',
      'events tool_call {"tool":"log"}, handoff: no match for {"type":"handoff"} in order; events were: handoff, tool_call, tool_call',
    ]);
  });

  it('checks the order of expected tool calls', async () => {
    expect(await failed({ toolCalls: ['log', 'get_invoice'] })).toEqual(['toolCalls in order log, get_invoice: tools called: get_invoice({"invoice_id":"INV-1","verbose":true}), log({})']);
  });

  it('compares deeply and partially', () => {
    expect(containsDeep({ a: { b: 1, c: 2 } }, { a: { b: 1 } })).toBe(true);
    expect(containsDeep({ a: [1, 2] }, { a: [1] })).toBe(false);
    expect(containsDeep({ a: null }, { a: null })).toBe(true);
    expect(containsDeep({}, { a: null })).toBe(false);
  });
});

describe('judge', () => {
  it('offline: quoted phrases must all appear; otherwise one shared keyword passes', () => {
    expect(offlineVerdict('Asks for the "invoice number"', 'What is the Invoice Number?').pass).toBe(true);
    expect(offlineVerdict('Says "sorry" and "refund"', 'We are sorry.')).toEqual({ pass: false, reason: 'offline judge: the response lacks "refund"' });
    expect(offlineVerdict('Talks about refunds', 'Your refund is on its way').pass).toBe(true);
    expect(offlineVerdict('Talks about refunds', 'Hello there').pass).toBe(false);
  });

  it('asks a real model with the rubric and the response; the persona model sees the agent as its user', async () => {
    const asked: LlmRequest[] = [];
    const answers = ['{"reason": "it asks", "pass": true}', 'DONE'];
    const llm = { name: 'openai', complete: async (req: LlmRequest) => (asked.push(req), { content: answers.shift()!, toolCalls: [] }) } as unknown as LlmProvider;
    const options = { resolveModel: async (model: string | null) => ({ llm, provider: 'openai', model: model ?? 'gpt-x' }), judgeModel: 'judge-1' };
    expect(await createJudge(options)({ rubric: 'Asks for the number', response: 'Which number?' })).toEqual({ pass: true, reason: 'it asks' });
    expect(asked[0]?.model).toBe('judge-1');
    expect(asked[0]?.messages.at(-1)).toEqual({ role: 'user', content: 'Rubric:\nAsks for the number\n\nResponse:\nWhich number?' });
    const next = await nextPersonaMessage(options, { name: 'Ann', goals: ['refund'] }, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello' }], 1);
    expect(next).toBeNull();
    expect(asked[1]?.messages.slice(1)).toEqual([{ role: 'assistant', content: 'hi' }, { role: 'user', content: 'Hello' }]);
    expect(asked[1]?.messages[0]?.content).toContain('You are Ann.');
  });

  it("reads a model's verdict, fenced or not, and refuses anything else", () => {
    expect(parseVerdict('```json\n{"reason": "asks", "pass": true}\n```')).toEqual({ pass: true, reason: 'asks' });
    expect(parseVerdict('{"pass": "yes"}')).toBeNull();
    expect(parseVerdict('I think it passes')).toBeNull();
  });
});

describe('runner', () => {
  it('starts no turn once the time budget has run out', async () => {
    const project = loadScenarioProject(path.join(ROOT, 'test/fixtures/abl-tests'));
    const report = await runScenarioFiles(project.files, { compiled: project.compiled, resolveModel: platformModelResolver({}), deadlineMs: 0 });
    expect(report.files[0]!.scenarios.map((s) => [s.passed, s.turns.length, s.errors])).toEqual([
      [false, 0, ["not run: the run's time budget ran out"]],
      [false, 0, ["not run: the run's time budget ran out"]],
    ]);
  });
});

describe('npm run abl:test', () => {
  const run = async (args: string[]) => {
    let out = '';
    let err = '';
    const code = await runAblTestCli(args, { out: (t) => (out += t), err: (t) => (err += t), env: {}, cwd: ROOT });
    return { code, out, err };
  };

  it("passes the seeded examples' scenarios with the offline model", async () => {
    const { code, out, err } = await run([]);
    expect(err).toBe('');
    expect(out).toMatch(/\n(\d+) passed, 0 failed, \1 total/);
    for (const file of ['Billing_Agent', 'Complaints_Agent', 'Onboarding_Agent', 'Support_Hub', 'Trip_Planner']) expect(out).toContain(`examples/support-desk/agents/${file}.scenarios.yaml`);
    expect(code).toBe(0);
  });

  it('reports a failing scenario, writes JUnit XML and exits 1', async () => {
    const junit = path.join(mkdtempSync(path.join(tmpdir(), 'abl-test-')), 'out', 'junit.xml');
    const { code, out } = await run(['test/fixtures/abl-tests', '--junit', junit]);
    expect(code).toBe(1);
    expect(out).toContain("  ✓ tells the order's status (Greeter, 1 turn,");
    expect(out).toContain('  ✗ expects a status the mock does not give (Greeter, 1 turn,');
    expect(out).toContain('turn 1 ("A123"): expected response.contains "Order A123 is delivered." — got "Hello from Greeter.\\n\\nWhich order?\\n\\nOrder A123 is shipped."');
    expect(out).toContain('scenario: expected notCalled get_order — tools called: get_order({"order_id":"A123"})');
    expect(out).toMatch(/1 passed, 1 failed, 2 total/);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain('<testsuite name="test/fixtures/abl-tests/agents/Greeter.scenarios.yaml" tests="2" failures="1"');
    expect(xml).toMatch(/<testcase name="tells the order&apos;s status" classname="[^"]+" time="[\d.]+"\/>/);
    expect(xml).toContain('<failure message="turn 1 (&quot;A123&quot;): expected response.contains &quot;Order A123 is delivered.&quot;');
    expect(xml).toContain('scenario: expected notCalled get_order');
  });

  it('exits 2 on an invalid scenario file, naming file, line, scenario and path', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'abl-test-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(path.join(dir, 'agents/Helper.agent.abl'), 'AGENT: Helper\nGOAL: "Help"\n');
    writeFileSync(path.join(dir, 'agents/Helper.scenarios.yaml'), 'scenarios:\n  - name: broken\n    turns:\n      - user: hi\n        expect: { status: sleeping }\n');
    const { code, err } = await run([dir]);
    expect(code).toBe(2);
    expect(err).toMatch(/agents\/Helper\.scenarios\.yaml:5: scenario "broken": scenarios\[0\]\.turns\[0\]\.expect\.status: /);
    const filtered = await run(['test/fixtures/abl-tests', '--filter', 'tells']);
    expect(filtered.code).toBe(0);
    expect(filtered.out).toMatch(/1 passed, 0 failed, 1 total/);
  });
});

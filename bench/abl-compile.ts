// Benchmark: parse + compile + validate a generated project of 100 agents (~10,000 lines) in
// memory, several runs; prints min/median time and peak memory. Prints figures, asserts nothing.

import { compileProject, type ProjectFile } from '../abl';

const AGENTS = 100;
const RUNS = 7;

function agentSource(i: number): string {
  const name = `Agent_${i}`;
  const next = `Agent_${(i + 1) % AGENTS}`;
  const lines: string[] = [
    `AGENT: ${name}`,
    `GOAL: "Handle request type ${i} end to end."`,
    `PERSONA: "Helpful specialist number ${i}."`,
    'LIMITATIONS:',
    '  - Never share internal notes',
    '  - Never promise refunds',
    'TOOLS:',
    '  FROM "../tools/common.tools.abl" USE: lookup, update',
    `  local_${i}(id: string, amount: number = 0) -> {ok: boolean, note: string}`,
    '    type: http',
    `    endpoint: "https://svc.example.com/${i}/{id}"`,
    '    method: POST',
    '    confirmation:',
    '      require: always',
    'GATHER:',
    '  customer_id:',
    '    prompt: "Your customer id?"',
    '    validate: pattern(^C-\\d{5}$)',
    '  amount:',
    '    type: number',
    '    validate: min(1) max(10000)',
    'CONSTRAINTS:',
    '  policy:',
    '    - REQUIRE customer_id IS SET BEFORE calling update',
    '      ON_FAIL: "I need your customer id first."',
    '    - RESTRICT amount > 5000',
    '      ON_FAIL: ESCALATE',
    'HANDOFF:',
    `  - TO: ${next}`,
    `    WHEN: topic == "t${(i + 1) % AGENTS}"`,
    '    RETURN: true',
    `  - TO: ${i === 0 ? 'Agent_1' : 'Agent_0'}`,
    '    WHEN: user asks for the main desk',
    'ESCALATE:',
    '  triggers:',
    '    - WHEN: amount > 5000 AND human IS NOT SET',
    '      REASON: "Amount {{amount}} needs approval"',
    '      TAGS: [approval]',
    'COMPLETE:',
    '  - WHEN: done == true',
    '    RESPOND: "All set, {{customer_id}}."',
    'FLOW:',
    '  entry_point: s0',
  ];
  const steps = 3;
  for (let s = 0; s < steps; s++) {
    lines.push(
      `  s${s}:`,
      '    REASONING: false',
      `    RESPOND: "Step ${s} for {{customer_id}}: {{FORMAT_CURRENCY(amount, 'USD')}}"`,
      '    GATHER:',
      `      - field_${s}: required`,
      `        prompt: "Value for step ${s}?"`,
      '    CALL: lookup',
      '      WITH:',
      '        id: customer_id',
      `      AS: r${s}`,
      '    ON_RESULT:',
      `      - IF: r${s}.ok == true AND LENGTH(r${s}.note) > 0`,
      `        SET: note_${s} = UPPER(r${s}.note)`,
      `        THEN: ${s + 1 < steps ? `s${s + 1}` : 'COMPLETE'}`,
      '      - ELSE:',
      '        RESPOND: "Could not load that."',
      `        THEN: s${s}`,
      '    ON_FAIL:',
      '      THEN: ESCALATE',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The generated project (also used by bench/deployment-create.ts). */
export function project(): ProjectFile[] {
  const files: ProjectFile[] = [
    { path: 'project.json', content: '{"name":"bench","entryAgent":"Agent_0"}' },
    {
      path: 'tools/common.tools.abl',
      content: 'TOOLS:\n  base_url: "https://common.example.com"\n  lookup(id: string) -> {ok: boolean, note: string}\n    type: http\n    endpoint: "/lookup/{id}"\n  update(id: string, note: string) -> object\n    type: http\n    endpoint: "/update/{id}"\n    method: PUT\n',
    },
  ];
  for (let i = 0; i < AGENTS; i++) files.push({ path: `agents/Agent_${i}.agent.abl`, content: agentSource(i) });
  return files;
}

function main(): void {
  const files = project();
  const lines = files.reduce((n, f) => n + f.content.split('\n').length, 0);
  const bytes = files.reduce((n, f) => n + f.content.length, 0);
  let peakRss = process.memoryUsage().rss;
  let peakHeap = process.memoryUsage().heapUsed;
  const times: number[] = [];
  let errors = 0;
  let warnings = 0;
  compileProject(files); // warm-up (JIT)
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    const out = compileProject(files);
    times.push(performance.now() - t0);
    errors = out.diagnostics.filter((d) => d.severity === 'error').length;
    if (r === 0) for (const d of out.diagnostics.slice(0, 3)) console.log(`  ${d.path}:${d.line}:${d.column} ${d.code} ${d.message}`);
    warnings = out.diagnostics.length - errors;
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }
  times.sort((a, b) => a - b);
  const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`;
  console.log(`ABL compile bench: ${AGENTS} agents, ${files.length} files, ${lines} lines, ${(bytes / 1024).toFixed(0)} KiB`);
  console.log(`diagnostics: ${errors} errors, ${warnings} warnings`);
  console.log(`parse+compile+validate over ${RUNS} runs: min ${times[0]?.toFixed(1)} ms, median ${times[Math.floor(RUNS / 2)]?.toFixed(1)} ms, max ${times[RUNS - 1]?.toFixed(1)} ms`);
  console.log(`peak memory: rss ${mb(peakRss)}, heapUsed ${mb(peakHeap)}`);
}

// Only when run, not when another bench imports the project.
if (require.main === module) main();

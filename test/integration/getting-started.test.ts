// docs/getting-started.md, run as written: every ```bash block of the walk-through, in order, in
// one bash (so its variables and functions carry over, as in the reader's terminal), with real
// curl against the dev stack `npm start` runs (infra/dev-stack.ts: the real API and worker
// processes), the doc's mock service as a real process, and the Temporal CLI. Only what a reader
// cannot copy as is changes: the ports (4010 becomes a free one) and where the stack keeps its
// data; the doc's `npm start` line gives the stack its environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts, manage, ROOT, type ManagedProcess } from '../../infra/processes';
import { eventually } from '../support/eventually';

// A whole dev stack starts here, and the walk-through waits on callbacks and a human task.
jest.setTimeout(300_000);

const DOC = path.join(ROOT, 'docs', 'getting-started.md');
const DOC_RECEIVER_PORT = '4010';

interface Block {
  line: number;
  code: string;
}

/** The doc's ```bash blocks (list items' indented ones too), their indentation removed. */
function bashBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```bash\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    const start = i + 1;
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(indent));
    blocks.push({ line: start, code: body.join('\n') });
  }
  return blocks;
}

/** The reader's terminal: one bash, each block sourced from a file (stdin stays free for the block's own commands). */
class Terminal {
  private output = '';
  private readonly child: ChildProcess;
  private count = 0;

  constructor(
    private readonly cwd: string,
    env: NodeJS.ProcessEnv,
  ) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Runs `code` and resolves with what it printed (stdout and stderr) and the status of its last command. */
  async run(code: string): Promise<{ output: string; status: number }> {
    const file = path.join(this.cwd, `.block-${++this.count}.sh`);
    writeFileSync(file, code);
    const marker = `__block_${randomBytes(6).toString('hex')}__`;
    const from = this.output.length;
    this.child.stdin!.write(`source ${JSON.stringify(file)} < /dev/null 2>&1; echo "${marker} $?"\n`);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const match = new RegExp(`${marker} (\\d+)\\n`).exec(this.output.slice(from));
      if (match) return { output: this.output.slice(from, from + match.index), status: Number(match[1]) };
      if (this.child.exitCode !== null) throw new Error(`the shell exited (${this.child.exitCode}):\n${this.output.slice(from)}`);
      if (Date.now() > deadline) throw new Error(`block did not finish in 120 s:\n${code}\n--- output ---\n${this.output.slice(from)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A shell variable the blocks set. */
  async variable(name: string): Promise<string> {
    return (await this.run(`printf '%s' "$${name}"`)).output;
  }

  close(): void {
    this.child.stdin!.end();
    this.child.kill('SIGTERM');
  }
}

/** A long-running block (the mock service), in its own process group so that all of it stops. */
function background(code: string, cwd: string, env: NodeJS.ProcessEnv): { proc: ManagedProcess; output: () => string; stop: () => void } {
  const child = spawn('bash', ['--noprofile', '--norc', '-c', code], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return {
    proc: manage('receiver', child),
    output: () => output,
    stop: () => {
      if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGTERM');
    },
  };
}

/** Re-runs a block that only reads until `ok` accepts its output (a callback's or a task's turn runs after the request that caused it); its last output. */
async function runUntil(term: Terminal, code: string, ok: (output: string) => boolean): Promise<string> {
  const last = await eventually(() => term.run(code), (r) => r.status === 0 && ok(r.output), 60_000, 1000);
  expect(last.status).toBe(0);
  return last.output;
}

const blocks = bashBlocks(readFileSync(DOC, 'utf8'));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-getting-started-'));
const dataDir = path.join(tmp, 'data');
const work = path.join(tmp, 'repo');

let stack: (ManagedProcess & { output: () => string }) | null = null;
let receiver: ReturnType<typeof background> | null = null;
let term: Terminal | null = null;

afterAll(async () => {
  term?.close();
  receiver?.stop();
  if (stack) {
    stack.child.kill('SIGTERM');
    await stack.exited;
  }
  rmSync(tmp, { recursive: true, force: true });
});

it('walks through docs/getting-started.md: the agent, a chat, the async tool and its callback, the human task, the Temporal query and a new version', async () => {
  const [receiverFree, api, sample] = await freePorts(3);
  const receiverPort = String(receiverFree);
  const ports = { api: api!, sample: sample! };
  // The doc's port, everywhere it is written (the tool's endpoint, the allowed destination, the service).
  const code = blocks.map((b) => ({ ...b, code: b.code.replace(new RegExp(`\\b${DOC_RECEIVER_PORT}\\b`, 'g'), receiverPort) }));
  let next = 0;
  /** The next block, which must contain `key`: the doc and this test walk in step. */
  const take = (key: string): string => {
    const block = code[next++];
    if (!block || !block.code.includes(key)) throw new Error(`expected the doc's bash block #${next} to contain "${key}", found at line ${block?.line}:\n${block?.code}`);
    return block.code;
  };

  // The reader's checkout: the dev stack's data, examples/ and the built tools, where the doc's
  // relative paths expect them; the files the doc writes land here, not in the repository.
  mkdirSync(work);
  for (const [link, target] of [
    ['.data', dataDir],
    ['examples', path.join(ROOT, 'examples')],
    ['.tools', path.join(ROOT, '.tools')],
  ] as const) {
    symlinkSync(target, path.join(work, link));
  }
  const shellEnv: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.SB_TEST_TEMPORAL_ADDRESS! };
  delete shellEnv.NODE_ENV;

  // 1. `npm start` with the doc's environment: the stack started as its bootstrap would (the tools are
  // built already), on this test's Temporal and FerretDB.
  const start = /^((?:[A-Z_]+=\S+\s+)*)npm start$/.exec(take('npm start').trim());
  expect(start).not.toBeNull();
  const docEnv = Object.fromEntries([...start![1]!.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  expect(docEnv).toEqual({ TOOL_ALLOWED_PRIVATE_DESTINATIONS: `127.0.0.1:${receiverPort}` });
  const stackEnv: NodeJS.ProcessEnv = {
    ...shellEnv,
    ...docEnv,
    SWITCHBOARD_DATA_DIR: dataDir,
    PORT: String(ports.api),
    SAMPLE_BACKEND_PORT: String(ports.sample),
    TEMPORAL_ADDRESS: process.env.SB_TEST_TEMPORAL_ADDRESS!,
    TEMPORAL_TASK_QUEUE: `tq-getting-started-${randomBytes(4).toString('hex')}`,
    MONGODB_URI: `${process.env.SB_TEST_MONGODB_URI!.replace(/\/$/, '')}/getting_started_${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'warn',
    // Its worker loads the workflow bundle the global setup built rather than bundling again.
    WORKFLOW_BUNDLE_PATH: process.env.SB_TEST_WORKFLOW_BUNDLE!,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/dev-stack.ts'], { cwd: ROOT, env: stackEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stackOutput = '';
  child.stdout!.on('data', (d: Buffer) => (stackOutput += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stackOutput += d.toString()));
  stack = { ...manage('dev-stack', child), output: () => stackOutput };
  await eventually(
    () => Promise.resolve(stackOutput),
    (out) => out.includes('Switchboard is running') || child.exitCode !== null,
    150_000,
    250,
  );
  expect(stackOutput).toContain('Switchboard is running');
  // The reader's destination is kept, and the sample back-end's added to it.
  expect(stackOutput).toContain(`tools may reach the private destinations 127.0.0.1:${receiverPort},127.0.0.1:${ports.sample} (TOOL_ALLOWED_PRIVATE_DESTINATIONS)`);

  term = new Terminal(work, shellEnv);
  const run = async (key: string): Promise<string> => {
    const block = take(key);
    const { output, status } = await term!.run(block);
    if (status !== 0) throw new Error(`block failed (${status}):\n${block}\n--- output ---\n${output}`);
    return output;
  };

  // 2. The shell, pointed at the stack by the dev credentials.
  expect(await run(`json 'v.project.name'`)).toBe('Dev Project\n');
  expect(await term.variable('SB_URL')).toBe(`http://localhost:${ports.api}`);

  // 3. The mock order service, in its own terminal.
  receiver = background(take('receiver.mjs'), work, shellEnv);
  const listening = `receiver listening on http://127.0.0.1:${receiverPort}`;
  expect(await eventually(() => Promise.resolve(receiver!.output()), (out) => out.includes(listening), 30_000, 100)).toContain(listening);

  // 4-5. The agent written from scratch, created and versioned.
  await run('cat > my-agents/Refund_Desk.agent.abl');
  expect(readFileSync(path.join(work, 'my-agents', 'Refund_Desk.agent.abl'), 'utf8')).toMatch(/^AGENT: Refund_Desk\n/);
  expect(await run(`json 'v.agent.agentPath'`)).toBe('dev/Refund_Desk\n1.0.0\n');

  // 6. A chat by agentId: the turn ends at the async call.
  expect(await run('refund for ORD-1234')).toBe('Which order should I refund? (ORD-1234)\n\nLooking up ORD-1234.\nsuspend\n');
  const firstSession = await term.variable('SESSION');
  expect(firstSession).toMatch(/^[0-9a-f-]{36}$/);

  // 7. The service got the call with a callback URL and secret, answered it, and the session resumed.
  expect(await eventually(() => Promise.resolve(receiver!.output()), (out) => out.includes('callback: 200 {"ok":true}'), 30_000, 100)).toContain('callback: 200 {"ok":true}');
  expect(receiver.output()).toMatch(
    new RegExp(`tool call: POST /orders/lookup \\{"order_id":"ORD-1234","callbackUrl":"http://localhost:${ports.api}/api/v1/callbacks/cb_[0-9a-f]{32}","callbackSecret":"<callback secret>"\\}`),
  );
  const transcript = await runUntil(term, take('m.role'), (out) => out.includes('assistant: ORD-1234 was delivered: $250.00.'));
  expect(transcript).toBe(
    'user: I would like a refund for ORD-1234\nassistant: Which order should I refund? (ORD-1234)\n\nLooking up ORD-1234.\n' +
      'assistant: ORD-1234 was delivered: $250.00.\n\nI have passed this to a member of our team. I will continue as soon as they respond.\n',
  );

  // 8. The human task: found in the queue, approved, and the session refunds.
  expect(await run(`json 'v.tasks[0].id'`)).toBe('Refund 250 for ORD-1234 (approval, pending)\n');
  expect(await run('/resolve')).toBe('completed\n');
  expect(await runUntil(term, take('at(-1).content'), (out) => out === 'Refunded $250.00 for ORD-1234.\n')).toBe('Refunded $250.00 for ORD-1234.\n');

  // 9. The session in Temporal's visibility, by the doc's query, through the Temporal CLI.
  const listed = new RegExp(`Completed\\s+session/${firstSession}\\s+agentSession`);
  expect(await runUntil(term, take('temporal workflow list'), (out) => listed.test(out))).toMatch(listed);

  // 10. The reader's edit (every 100 becomes 500), then a new version, and a session on it.
  const file = path.join(work, 'my-agents', 'Refund_Desk.agent.abl');
  writeFileSync(file, readFileSync(file, 'utf8').replaceAll('100', '500'));
  expect(await run('/dsl"')).toBe('true\n1.0.1\n');
  expect(await run('ORD-5678')).toBe('suspend\n');
  expect(await term.variable('SESSION')).not.toBe(firstSession);
  const refunded = 'ORD-5678 was delivered: $250.00.\n\nRefunded $250.00 for ORD-5678.\n';
  expect(await runUntil(term, take('at(-1).content'), (out) => out === refunded)).toBe(refunded);
  expect(receiver.output()).toContain('"order_id":"ORD-5678"');

  // The troubleshooting block reads that session's trace: the call went out and its callback came.
  expect(await run('"suspension", "resume", "error"')).toMatch(/^suspension \{"agent":"Refund_Desk","tool":"look_up_order",.*\nresume \{.*"outcome":"callback".*\n$/);

  expect(next).toBe(code.length);
});

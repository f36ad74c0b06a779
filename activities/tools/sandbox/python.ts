// The Python engine of sandboxed code tools: CPython compiled to WebAssembly (Pyodide, from its npm
// package) in a child process that serves exactly one call and exits. The child has no network and
// no view of other processes (its own user, network and PID namespaces), no environment, reads only
// its own folder (Node's permission model), cannot generate code from strings, runs as `nobody`
// when the worker is root, and is SIGKILLed at its deadline or when its memory passes the limit.
// A few children wait loaded (SANDBOX_PYTHON_WARM) so a call need not pay for loading Pyodide.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Json } from '../../../abl/ir';
import { type Config } from '../../../lib/config';
import { type MemoryBridge, type SandboxEngine, type SandboxOutcome, type SandboxRun } from './engine';

export interface PythonEngineOptions {
  /** Children kept loaded and waiting for a call (filled from the first call on). @default 1 */
  warm?: number;
  /** Calls running at once; more wait for a slot. @default 4 */
  maxConcurrent?: number;
  /**
   * Start each child in its own user, network and PID namespaces (`unshare`). When they cannot be
   * made, calls fail as `unavailable`. false drops that layer: the code could then reach the network.
   * @default true
   */
  namespaces?: boolean;
  /** How long a child may take to load Pyodide before the call is `unavailable` (ms). @default 30000 */
  startTimeoutMs?: number;
  /** How often a running child's memory is read (ms). @default 10 */
  memoryPollMs?: number;
  /** The `unshare` program. @default /usr/bin/unshare or /bin/unshare, whichever exists */
  unshare?: string;
}

/** The engine's options from the process configuration. */
export function pythonEngineOptions(
  config: Pick<Config, 'SANDBOX_PYTHON_WARM' | 'SANDBOX_PYTHON_MAX_CONCURRENT' | 'SANDBOX_PYTHON_WITHOUT_NAMESPACES'>,
): PythonEngineOptions {
  return {
    warm: config.SANDBOX_PYTHON_WARM,
    maxConcurrent: config.SANDBOX_PYTHON_MAX_CONCURRENT,
    namespaces: !config.SANDBOX_PYTHON_WITHOUT_NAMESPACES,
  };
}

const RUNNER_DIR = path.join(__dirname, 'python');
const PYODIDE_FILES = ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json', 'package.json'];
const NOBODY = 65534;
const MIB = 1024 * 1024;
/** Largest memory-store request or answer passed through, on top of a call's output limit. */
const MEMORY_MESSAGE_BYTES = 4 * MIB;
const STDERR_KEPT = 4096;
const NAMESPACE_HINT = ' (a host that cannot give it user namespaces may set SANDBOX_PYTHON_WITHOUT_NAMESPACES outside production: docs/code-tools.md)';

/**
 * A private copy of the runner and of Pyodide, world-readable (the child may run as `nobody`, who
 * may not reach the checkout) and owned by this process's user: the child's permission model
 * allows reading this folder and nothing else.
 */
export function prepareStage(): string {
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-python-'));
  liveStages.add(stage);
  fs.chmodSync(stage, 0o755);
  const pyodideDir = path.dirname(require.resolve('pyodide/package.json'));
  fs.mkdirSync(path.join(stage, 'pyodide'), { mode: 0o755 });
  for (const file of PYODIDE_FILES) copyReadable(path.join(pyodideDir, file), path.join(stage, 'pyodide', file));
  for (const file of ['runner.mjs', 'prelude.py']) copyReadable(path.join(RUNNER_DIR, file), path.join(stage, file));
  return stage;
}

/** Stages still on disk: removed at close(), or when the process exits without one. */
const liveStages = new Set<string>();
process.once('exit', () => {
  for (const stage of liveStages) fs.rmSync(stage, { recursive: true, force: true });
});

export function removeStage(stage: string): void {
  fs.rmSync(stage, { recursive: true, force: true });
  liveStages.delete(stage);
}

function copyReadable(from: string, to: string): void {
  fs.copyFileSync(from, to);
  fs.chmodSync(to, 0o644);
}

function firstExisting(candidates: string[]): string | null {
  for (const file of candidates) {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // next
    }
  }
  return null;
}

export interface IsolatedCommand {
  command: string;
  args: string[];
  uid?: number;
  gid?: number;
  /** Whether `command` is `unshare`, whose child is the Node process (for reading its memory). */
  namespaced: boolean;
}

/**
 * The command line of a sandbox child running `script` (a file inside `stage`): the layers every
 * child gets. Exported so the boundary itself can be tested with probe scripts.
 */
export function isolatedCommand(
  stage: string,
  script: string,
  opts: { namespaces: boolean; heapMb: number; args?: string[]; unshare?: string },
): IsolatedCommand | { unavailable: string } {
  const node = [
    process.execPath,
    '--disallow-code-generation-from-strings',
    '--experimental-permission',
    `--allow-fs-read=${stage}/`,
    `--max-old-space-size=${opts.heapMb}`,
    '--no-warnings',
    path.join(stage, script),
    ...(opts.args ?? []),
  ];
  let argv = node;
  if (opts.namespaces) {
    const unshare = firstExisting(opts.unshare ? [opts.unshare] : ['/usr/bin/unshare', '/bin/unshare']);
    if (!unshare) return { unavailable: `the Python sandbox needs \`unshare\` (util-linux) to cut the network off; it is not installed${NAMESPACE_HINT}` };
    argv = [unshare, '--user', '--map-root-user', '--net', '--pid', '--fork', '--kill-child', ...node];
  }
  // The child dies with this process even while it runs a loop (a parent-death signal).
  const setpriv = firstExisting(['/usr/bin/setpriv', '/bin/setpriv']);
  if (setpriv) argv = [setpriv, '--pdeathsig', 'KILL', '--', ...argv];
  const root = process.getuid?.() === 0;
  return {
    command: argv[0]!,
    args: argv.slice(1),
    ...(root ? { uid: NOBODY, gid: NOBODY } : {}),
    namespaced: opts.namespaces,
  };
}

/** Spawns an isolated command with an empty environment and the four pipes the runner speaks on. */
export function spawnIsolated(cmd: IsolatedCommand, cwd: string): ChildProcess {
  return spawn(cmd.command, cmd.args, {
    cwd,
    env: {},
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    ...(cmd.uid !== undefined ? { uid: cmd.uid, gid: cmd.gid } : {}),
  });
}

const SNAPSHOT_MAX_BYTES = 512 * MIB;

/**
 * Has a sandbox child load Pyodide and send back a memory image of the loaded interpreter, kept in
 * the stage: children start from it at a fraction of a full load's CPU. Our code only, no call's.
 */
export async function makeSnapshot(stage: string, opts: { namespaces: boolean; unshare?: string }, timeoutMs: number): Promise<void> {
  const cmd = isolatedCommand(stage, 'runner.mjs', { ...opts, heapMb: 512, args: ['--make-snapshot'] });
  if ('unavailable' in cmd) throw new Error(cmd.unavailable);
  const proc = spawnIsolated(cmd, stage);
  const chunks: Buffer[] = [];
  let size = 0;
  let stderr = '';
  proc.stdin!.end();
  proc.stdout!.resume();
  proc.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < STDERR_KEPT) stderr += chunk.toString('utf8');
  });
  (proc.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > SNAPSHOT_MAX_BYTES) proc.kill('SIGKILL');
    else chunks.push(chunk);
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    proc.on('error', () => resolve([null, null]));
    proc.on('close', (c, sig) => resolve([c, sig]));
  });
  clearTimeout(timer);
  if (code !== 0 || size === 0 || size > SNAPSHOT_MAX_BYTES) {
    const said = stderr.trim().split('\n').filter(Boolean).slice(-3).join(' / ');
    const hint = opts.namespaces && /unshare/.test(said) ? NAMESPACE_HINT : '';
    throw new Error(`the Python sandbox could not start: ${said || (signal ? `signal ${signal}` : `exit code ${code}`)}${hint}`);
  }
  const file = path.join(stage, 'snapshot.bin');
  fs.writeFileSync(file, Buffer.concat(chunks), { mode: 0o644 });
}

/** The resident memory of a process in bytes, or null once it is gone. */
function residentBytes(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[1]);
  } catch {
    return null;
  }
}

/** The Node process `unshare --fork` started (it has its own PID inside the namespace). */
function childOf(pid: number): number | null {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const candidate = Number(entry);
    if (candidate !== pid && parentOf(candidate) === pid) return candidate;
  }
  return null;
}

type Event =
  | { t: 'ready' }
  | { t: 'log'; s: string }
  | { t: 'mem'; a: unknown; n: unknown; c: unknown }
  | { t: 'result'; v: Json }
  | { t: 'error'; m: string }
  | { t: 'limit'; k: 'output'; m: string };

/** One sandbox child: started, loaded, then given one call. */
class Child {
  readonly proc: ChildProcess;
  /** The Node process whose memory is watched. */
  private watched: number | null = null;
  readonly ready: Promise<void>;
  exited = false;
  private stderr = '';
  private buffered: Buffer = Buffer.alloc(0);
  private lineLimit = MEMORY_MESSAGE_BYTES;
  private onEvent: ((event: Event) => void) | null = null;
  private onExit: ((why: string) => void) | null = null;
  private onOverflow: (() => void) | null = null;

  constructor(
    private readonly cmd: IsolatedCommand,
    stage: string,
    startTimeoutMs: number,
  ) {
    this.proc = spawnIsolated(cmd, stage);
    this.proc.stdin!.on('error', () => {});
    this.proc.stdout!.on('data', () => {});
    this.proc.stderr!.on('data', (chunk: Buffer) => {
      if (this.stderr.length < STDERR_KEPT) this.stderr += chunk.toString('utf8').slice(0, STDERR_KEPT - this.stderr.length);
    });
    const events = this.proc.stdio[3] as NodeJS.ReadableStream;
    events.on('data', (chunk: Buffer) => this.receive(chunk));
    events.on('error', () => {});
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`the Python sandbox did not start within ${startTimeoutMs} ms`));
      }, startTimeoutMs);
      // A call waiting on this child holds the process through the child's own handles.
      timer.unref();
      this.onEvent = (event) => {
        if (event.t !== 'ready') return;
        clearTimeout(timer);
        try {
          this.watched = cmd.namespaced ? childOf(this.proc.pid!) : this.proc.pid!;
        } catch {
          this.watched = null;
        }
        if (this.watched === null) {
          this.kill();
          reject(new Error('the Python sandbox started, but its memory cannot be watched'));
          return;
        }
        resolve();
      };
      this.onExit = () => {
        clearTimeout(timer);
        reject(new Error(`the Python sandbox could not start: ${this.describeExit()}`));
      };
    });
    this.ready.catch(() => {});
    this.proc.on('error', (err) => this.exit(err.message));
    // 'close', not 'exit': the last events may still be in the pipe when the process is gone.
    this.proc.on('close', (code, signal) => this.exit(signal ? `signal ${signal}` : `exit code ${code}`));
  }

  /**
   * Whether the child keeps the worker's process alive: only while a call runs on it. A loaded
   * child waiting in the pool never does, so a worker (or a test) that is done can exit.
   */
  setHeld(held: boolean): void {
    const handles = [this.proc, ...this.proc.stdio] as Array<{ ref?: () => void; unref?: () => void } | null>;
    for (const h of handles) (held ? h?.ref : h?.unref)?.call(h);
  }

  private exitWhy = '';
  private exit(why: string): void {
    if (this.exited) return;
    this.exited = true;
    this.exitWhy = why;
    this.onExit?.(why);
  }

  describeExit(): string {
    const said = this.stderr.trim().split('\n').filter(Boolean).slice(-3).join(' / ');
    return said ? `${said} (${this.exitWhy})` : this.exitWhy;
  }

  stderrText(): string {
    return this.stderr;
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    for (;;) {
      const end = this.buffered.indexOf(10);
      if (end < 0) break;
      const line = this.buffered.subarray(0, end);
      this.buffered = this.buffered.subarray(end + 1);
      let event: Event;
      try {
        event = JSON.parse(line.toString('utf8')) as Event;
      } catch {
        continue;
      }
      if (event && typeof event === 'object') this.onEvent?.(event);
    }
    if (this.buffered.length > this.lineLimit) {
      this.buffered = Buffer.alloc(0);
      this.onOverflow?.();
    }
  }

  /** Hands the child its call; events from then on go to the given handlers. */
  start(line: string, lineLimit: number, handlers: { event: (e: Event) => void; exit: () => void; overflow: () => void }): void {
    this.lineLimit = lineLimit;
    this.onEvent = handlers.event;
    this.onExit = handlers.exit;
    this.onOverflow = handlers.overflow;
    this.proc.stdin!.write(`${line}\n`);
  }

  answer(reply: { ok: true; v: Json } | { ok: false; e: string }): void {
    if (!this.exited) this.proc.stdin!.write(`${JSON.stringify(reply)}\n`);
  }

  rss(): number | null {
    return this.watched === null ? null : residentBytes(this.watched);
  }

  kill(): void {
    if (this.exited) return;
    // The Node process first (only while it is still the child of our unshare), then unshare,
    // whose --kill-child and the PID namespace take anything left with it.
    if (this.cmd.namespaced && this.watched !== null && parentOf(this.watched) === this.proc.pid) {
      try {
        process.kill(this.watched, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    this.proc.kill('SIGKILL');
  }
}

const unavailable = (message: string): SandboxOutcome => ({ ok: false, kind: 'unavailable', message, logs: [] });

function memoryRequest(event: { a: unknown; n: unknown; c: unknown }): { action: 'get' | 'set' | 'delete'; name: string; content?: Json } | string {
  const { a, n, c } = event;
  if (a !== 'get' && a !== 'set' && a !== 'delete') return 'unknown memory action';
  if (typeof n !== 'string' || n.length === 0) return 'a memory store name is a non-empty string';
  if (a === 'set') {
    if (!c || typeof c !== 'object' || Array.isArray(c)) return 'memory.set_content needs a dict';
    return { action: a, name: n, content: c as Json };
  }
  return { action: a, name: n };
}

class PythonEngine implements SandboxEngine {
  readonly runtime = 'python' as const;
  private readonly warm: number;
  private readonly maxConcurrent: number;
  private readonly namespaces: boolean;
  private readonly startTimeoutMs: number;
  private readonly memoryPollMs: number;
  private readonly unshare: string | undefined;
  private stage: string | null = null;
  private staging: Promise<string> | null = null;
  private idle: Child[] = [];
  private readonly busy = new Set<Child>();
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  constructor(options: PythonEngineOptions) {
    this.warm = Math.max(0, options.warm ?? 1);
    this.maxConcurrent = Math.max(1, options.maxConcurrent ?? 4);
    this.namespaces = options.namespaces ?? true;
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.memoryPollMs = options.memoryPollMs ?? 10;
    this.unshare = options.unshare;
  }

  /**
   * The stage, prepared at the first call: Pyodide copied and its memory image made. A failure
   * (no namespaces on this host, say) fails that call as unavailable; the next call tries again.
   */
  private ensureStage(): Promise<string> {
    this.staging ??= (async () => {
      let stage: string;
      try {
        stage = prepareStage();
      } catch (err) {
        throw new Error(`the Python sandbox could not be prepared: ${(err as Error).message}`);
      }
      this.stage = stage;
      await makeSnapshot(stage, { namespaces: this.namespaces, unshare: this.unshare }, this.startTimeoutMs * 4);
      return stage;
    })();
    const staging = this.staging;
    staging.catch(() => {
      if (this.staging === staging) {
        this.staging = null;
        if (this.stage) removeStage(this.stage);
        this.stage = null;
      }
    });
    return staging;
  }

  private newChild(): Child {
    const stage = this.stage!;
    // The JavaScript heap holds Pyodide's own objects and the strings passing out; Python's memory
    // is WebAssembly memory, outside it, and watched through the process's resident size.
    const cmd = isolatedCommand(stage, 'runner.mjs', { namespaces: this.namespaces, heapMb: 256, unshare: this.unshare });
    if ('unavailable' in cmd) throw new Error(cmd.unavailable);
    return new Child(cmd, stage, this.startTimeoutMs);
  }

  private refill(): void {
    while (!this.closed && this.stage !== null && this.idle.filter((c) => !c.exited).length < this.warm) {
      let child: Child;
      try {
        child = this.newChild();
      } catch {
        return;
      }
      this.idle.push(child);
      child.setHeld(false);
      // A child that fails to start leaves the pool; the next call starts its own and reports why.
      child.ready.catch(() => {
        this.idle = this.idle.filter((c) => c !== child);
      });
    }
  }

  private async slot(): Promise<void> {
    if (this.running < this.maxConcurrent) {
      this.running += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running -= 1;
  }

  async run(input: SandboxRun): Promise<SandboxOutcome> {
    if (this.closed) return unavailable('the Python sandbox is shut down');
    if (input.code === null) {
      return { ok: false, kind: 'error', message: `entrypoint "${input.entrypoint ?? ''}" names no code: a Python sandbox tool needs a code block`, logs: [] };
    }
    await this.slot();
    let child: Child | undefined;
    try {
      if (this.closed) return unavailable('the Python sandbox is shut down');
      try {
        await this.ensureStage();
      } catch (err) {
        return unavailable((err as Error).message);
      }
      if (this.closed) return unavailable('the Python sandbox is shut down');
      this.idle = this.idle.filter((c) => !c.exited);
      child = this.idle.shift();
      if (!child) {
        try {
          child = this.newChild();
        } catch (err) {
          return unavailable((err as Error).message);
        }
      }
      this.busy.add(child);
      child.setHeld(true);
      // The next call's child starts loading now, while this one runs.
      this.refill();
      try {
        await child.ready;
      } catch (err) {
        return unavailable((err as Error).message);
      }
      if (this.closed) return unavailable('the Python sandbox is shut down');
      return await this.call(child, input);
    } finally {
      if (child) {
        child.kill();
        this.busy.delete(child);
      }
      this.release();
      this.refill();
    }
  }

  private call(child: Child, input: SandboxRun): Promise<SandboxOutcome> {
    const baseline = child.rss() ?? 0;
    const memoryLimit = baseline + input.memoryMb * MIB;
    const outputLimit = input.maxOutputBytes;
    let output = '';
    let outputBytes = 0;
    const logs = (): string[] => {
      const lines = output.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      return lines;
    };
    return new Promise<SandboxOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: SandboxOutcome): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        clearInterval(watchdog);
        child.kill();
        resolve(outcome);
      };
      const fail = (kind: 'error' | 'timeout' | 'memory' | 'output' | 'unavailable', message: string): void =>
        finish({ ok: false, kind, message, logs: logs() });

      const deadline = setTimeout(() => fail('timeout', `the code ran longer than ${input.timeoutMs} ms`), input.timeoutMs);
      const watchdog = setInterval(() => {
        const rss = child.rss();
        if (rss !== null && rss > memoryLimit) fail('memory', `the code used more than ${input.memoryMb} MB of memory`);
      }, this.memoryPollMs);

      // One memory call at a time, as the helpers make them: a child that sends more before its
      // answer is not our runner, and would turn one call into a flood of requests.
      let memoryPending = false;
      const onMemory = (event: { a: unknown; n: unknown; c: unknown }): void => {
        if (memoryPending) return fail('error', 'the code broke the memory-store protocol');
        const request = memoryRequest(event);
        if (typeof request === 'string') return child.answer({ ok: false, e: request });
        const bridge: MemoryBridge | null = input.memory;
        if (!bridge) return child.answer({ ok: false, e: 'memory stores are not available here' });
        memoryPending = true;
        bridge.call(request.action, request.name, request.content).then(
          (value) => {
            memoryPending = false;
            if (!settled) child.answer({ ok: true, v: value ?? null });
          },
          (err: unknown) => {
            memoryPending = false;
            if (!settled) child.answer({ ok: false, e: err instanceof Error ? err.message : String(err) });
          },
        );
      };

      const onEvent = (event: Event): void => {
        switch (event.t) {
          case 'log': {
            if (typeof event.s !== 'string') return;
            outputBytes += Buffer.byteLength(event.s, 'utf8');
            if (outputBytes > outputLimit) return fail('output', `console output exceeded ${outputLimit} bytes`);
            output += event.s;
            return;
          }
          case 'mem':
            return onMemory(event);
          case 'result': {
            const size = Buffer.byteLength(JSON.stringify(event.v) ?? '', 'utf8');
            if (event.v === undefined) return fail('error', 'the code returned nothing readable');
            if (size > outputLimit) return fail('output', `the result is ${size} bytes, more than the ${outputLimit} allowed`);
            return finish({ ok: true, value: event.v, logs: logs() });
          }
          case 'error':
            return fail('error', typeof event.m === 'string' && event.m ? event.m.slice(0, 4000) : 'the code failed');
          case 'limit':
            return fail('output', typeof event.m === 'string' ? event.m.slice(0, 200) : `output exceeded ${outputLimit} bytes`);
          default:
            return;
        }
      };

      const onExit = (): void => {
        const stderr = child.stderrText();
        if (/heap out of memory|Out of memory|OOM/i.test(stderr)) return fail('memory', `the code used more than ${input.memoryMb} MB of memory`);
        fail('error', 'the Python process ended without an answer');
      };

      child.start(
        JSON.stringify({ code: input.code, entrypoint: input.entrypoint, params: input.params, maxOutputBytes: outputLimit }),
        // A line carries a result or output chunk (escaped, up to 6 bytes a byte) or a memory request.
        outputLimit * 6 + MEMORY_MESSAGE_BYTES,
        { event: onEvent, exit: onExit, overflow: () => fail('output', `output exceeded ${outputLimit} bytes`) },
      );
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.staging?.catch(() => {});
    const children = [...this.idle, ...this.busy];
    this.idle = [];
    for (const child of children) child.kill();
    await Promise.all(
      children.map((child) => (child.exited ? undefined : new Promise<void>((resolve) => child.proc.once('close', () => resolve())))),
    );
    for (const resolve of this.waiting.splice(0)) resolve();
    if (this.stage) removeStage(this.stage);
    this.stage = null;
  }
}

/** The sandbox engine for `runtime: python` tools. */
export function createPythonEngine(options: PythonEngineOptions = {}): SandboxEngine {
  return new PythonEngine(options);
}

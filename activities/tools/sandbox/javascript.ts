// The JavaScript sandbox engine: tenant code runs in QuickJS compiled to WebAssembly (a fresh
// runtime and context per call, javascript-thread.js), inside a small pool of worker threads so
// that a hostile call occupies one thread, never the worker's event loop. A thread that overstays
// a deadline, dies or breaks its QuickJS instance is terminated and replaced.
import { join } from 'node:path';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { type Json } from '../../../abl/ir';
import { type SandboxEngine, type SandboxOutcome, type SandboxRun } from './engine';

export interface JavaScriptEngineOptions {
  /** Worker threads running calls at once (SANDBOX_JS_THREADS); further calls wait for a free one. */
  threads?: number;
  /** QuickJS stack limit per call, in bytes (deep recursion fails with "stack overflow"). */
  stackBytes?: number;
  /** How long past a call's deadline a thread may stay silent before it is terminated. */
  graceMs?: number;
}

const THREAD_FILE = join(__dirname, 'javascript-thread.js');
const DEFAULT_STACK_BYTES = 256 * 1024;
const DEFAULT_GRACE_MS = 1000;
const MAX_START_FAILURES = 3;

type ThreadOutcome = { ok: true; json: string; logs: string[] } | Extract<SandboxOutcome, { ok: false }>;
type FromThread =
  | { type: 'ready' }
  | { type: 'broken'; message: string }
  | { type: 'memory'; id: number; seq: number; request: string }
  | { type: 'done'; id: number; outcome: ThreadOutcome; recycle: boolean };

interface Pending {
  id: number;
  run: SandboxRun;
  deadline: number;
  resolve: (outcome: SandboxOutcome) => void;
  /** Fails the call if no thread becomes free before its deadline. */
  queueTimer: NodeJS.Timeout | null;
}

interface Slot {
  worker: Worker;
  flag: Int32Array;
  replies: MessagePort;
  job: Pending | null;
  watchdog: NodeJS.Timeout | null;
  retired: boolean;
  /** Set when the thread has loaded QuickJS. */
  ready: boolean;
}

export function createJavaScriptEngine(options: JavaScriptEngineOptions = {}): SandboxEngine {
  const size = Math.max(1, Math.floor(options.threads ?? 2));
  const stackBytes = options.stackBytes ?? DEFAULT_STACK_BYTES;
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const slots: Slot[] = [];
  const queue: Pending[] = [];
  let nextId = 1;
  let closed = false;
  /** Threads start with the first call: an engine nobody uses costs nothing. */
  let started = false;
  /** Threads in a row that ended before they were ready, and why the last one said it broke. */
  let startFailures = 0;
  let brokenReason = '';

  function spawn(): Slot {
    const shared = new SharedArrayBuffer(4);
    const channel = new MessageChannel();
    const worker = new Worker(THREAD_FILE, {
      workerData: { flag: shared, replies: channel.port2 },
      transferList: [channel.port2],
      // The thread's own JavaScript heap holds only the host side (results, logs): QuickJS's heap
      // is WebAssembly memory, bounded per call by memory_mb.
      resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      env: {},
      // A plain CommonJS file: no loader (tsx) or flag of the parent's is needed in the thread.
      execArgv: [],
    });
    const slot: Slot = { worker, flag: new Int32Array(shared), replies: channel.port1, job: null, watchdog: null, retired: false, ready: false };
    worker.on('message', (msg: FromThread) => onMessage(slot, msg));
    worker.on('error', (err) => retire(slot, err instanceof Error && /ERR_WORKER_OUT_OF_MEMORY/.test(String((err as NodeJS.ErrnoException).code)) ? 'memory' : 'error'));
    worker.on('exit', () => retire(slot, 'error'));
    // Idle threads never keep the process alive (listeners re-reference a worker, so this comes last).
    worker.unref();
    channel.port1.unref();
    return slot;
  }

  function finishJob(slot: Slot, outcome: SandboxOutcome): void {
    const job = slot.job;
    if (!job) return;
    slot.job = null;
    slot.worker.unref();
    if (slot.watchdog) clearTimeout(slot.watchdog);
    slot.watchdog = null;
    job.resolve(outcome);
  }

  /** Takes a thread out of the pool (it is terminated), fails its call, and lets a new one take its place. */
  function retire(slot: Slot, kind: 'timeout' | 'memory' | 'error'): void {
    if (slot.retired) return;
    slot.retired = true;
    if (!slot.ready && kind !== 'timeout') startFailures++;
    const job = slot.job;
    if (job) {
      const message =
        kind === 'timeout'
          ? `exceeded its timeout of ${job.run.timeoutMs} ms`
          : kind === 'memory'
            ? `exceeded its memory limit of ${job.run.memoryMb} MB`
            : 'the sandbox stopped unexpectedly';
      finishJob(slot, { ok: false, kind, message, logs: [] });
    }
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    slot.replies.close();
    void slot.worker.terminate().catch(() => undefined);
    // The replacement starts loading now, not when the next call needs it.
    fill();
    pump();
  }

  function onMessage(slot: Slot, msg: FromThread): void {
    if (msg.type === 'ready') {
      slot.ready = true;
      startFailures = 0;
      return;
    }
    if (msg.type === 'broken') {
      brokenReason = msg.message;
      retire(slot, 'error');
      return;
    }
    if (msg.type === 'memory') {
      const job = slot.job;
      if (!job || job.id !== msg.id) return;
      void answerMemory(slot, job, msg.seq, msg.request);
      return;
    }
    if (msg.type === 'done') {
      if (!slot.job || slot.job.id !== msg.id) return;
      const o = msg.outcome;
      let outcome: SandboxOutcome;
      if (o.ok) {
        try {
          outcome = { ok: true, value: JSON.parse(o.json) as Json, logs: o.logs };
        } catch {
          outcome = { ok: false, kind: 'error', message: 'the result is not JSON', logs: o.logs };
        }
      } else {
        outcome = o;
      }
      finishJob(slot, outcome);
      // A call that hit a limit may leave the thread's WebAssembly memory grown or its instance
      // in doubt: a new thread takes its place.
      if (msg.recycle || (!o.ok && (o.kind === 'memory' || o.kind === 'timeout'))) retire(slot, 'error');
      else pump();
    }
  }

  async function answerMemory(slot: Slot, job: Pending, seq: number, request: string): Promise<void> {
    let reply: { seq: number; ok: true; json: string | null } | { seq: number; ok: false; message: string };
    try {
      const body = JSON.parse(request) as { action: 'get' | 'set' | 'delete'; memoryStoreName: string; content: Json };
      if (!job.run.memory) throw new Error('memory stores are not available here');
      if (!['get', 'set', 'delete'].includes(body.action) || typeof body.memoryStoreName !== 'string') throw new Error('invalid memory call');
      const value = await job.run.memory.call(body.action, body.memoryStoreName, body.action === 'set' ? body.content : undefined);
      reply = { seq, ok: true, json: value === null || value === undefined ? null : JSON.stringify(value) };
    } catch (err) {
      reply = { seq, ok: false, message: err instanceof Error ? err.message : String(err) };
    }
    if (slot.job !== job || slot.retired) return;
    slot.replies.postMessage(reply);
    Atomics.store(slot.flag, 0, 1);
    Atomics.notify(slot.flag, 0);
  }

  /** Starts threads up to the pool's size (each loads QuickJS once, in the background). */
  function fill(): void {
    if (startFailures >= MAX_START_FAILURES) {
      // Threads that cannot even load QuickJS are not started over and over: calls fail plainly.
      for (const job of queue.splice(0)) {
        if (job.queueTimer) clearTimeout(job.queueTimer);
        job.resolve({ ok: false, kind: 'unavailable', message: `the JavaScript sandbox cannot start${brokenReason ? `: ${brokenReason}` : ''}`, logs: [] });
      }
      return;
    }
    while (!closed && started && slots.length < size) slots.push(spawn());
  }

  function pump(): void {
    if (closed) return;
    while (queue.length > 0) {
      const slot = slots.find((s) => !s.job && !s.retired);
      if (!slot) return;
      const job = queue.shift()!;
      if (job.queueTimer) clearTimeout(job.queueTimer);
      job.queueTimer = null;
      slot.job = job;
      // A thread at work keeps the process alive until its call ends.
      slot.worker.ref();
      const s = slot;
      // The thread enforces the deadline itself (QuickJS's interrupt handler); this only catches
      // a thread that cannot answer (stuck outside the interpreter's loop).
      slot.watchdog = setTimeout(() => retire(s, 'timeout'), Math.max(0, job.deadline - Date.now()) + graceMs);
      slot.watchdog.unref();
      slot.worker.postMessage({
        type: 'run',
        id: job.id,
        code: job.run.code,
        entrypoint: job.run.entrypoint,
        params: job.run.params,
        deadline: job.deadline,
        timeoutMs: job.run.timeoutMs,
        memoryMb: job.run.memoryMb,
        maxOutputBytes: job.run.maxOutputBytes,
        stackBytes,
        hasMemory: job.run.memory !== null,
      });
    }
  }

  return {
    runtime: 'javascript',
    run(run: SandboxRun): Promise<SandboxOutcome> {
      if (closed) return Promise.resolve({ ok: false, kind: 'unavailable', message: 'the JavaScript sandbox is shut down', logs: [] });
      if (run.code === null || run.code.trim() === '') {
        return Promise.resolve({ ok: false, kind: 'unavailable', message: 'a JavaScript sandbox tool needs its code: an entrypoint alone names nothing this runtime can load', logs: [] });
      }
      if (run.entrypoint !== null && !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(run.entrypoint)) {
        return Promise.resolve({ ok: false, kind: 'error', message: `entrypoint "${run.entrypoint}" is not a function name`, logs: [] });
      }
      return new Promise<SandboxOutcome>((resolve) => {
        // The timeout bounds the whole call, the wait for a free thread included.
        const job: Pending = { id: nextId++, run, deadline: Date.now() + run.timeoutMs, resolve, queueTimer: null };
        job.queueTimer = setTimeout(() => {
          const index = queue.indexOf(job);
          if (index < 0) return;
          queue.splice(index, 1);
          resolve({ ok: false, kind: 'timeout', message: `exceeded its timeout of ${run.timeoutMs} ms waiting for a free sandbox thread`, logs: [] });
        }, run.timeoutMs);
        job.queueTimer.unref();
        queue.push(job);
        started = true;
        fill();
        pump();
      });
    },
    async close(): Promise<void> {
      closed = true;
      for (const job of queue.splice(0)) {
        if (job.queueTimer) clearTimeout(job.queueTimer);
        job.resolve({ ok: false, kind: 'unavailable', message: 'the JavaScript sandbox is shut down', logs: [] });
      }
      const all = slots.splice(0);
      for (const slot of all) {
        slot.retired = true;
        finishJob(slot, { ok: false, kind: 'unavailable', message: 'the JavaScript sandbox is shut down', logs: [] });
        slot.replies.close();
      }
      await Promise.all(all.map((s) => s.worker.terminate().catch(() => undefined)));
    },
  };
}

// What every sandbox engine (JavaScript, Python) offers the sandbox-tool activity: run one piece of
// untrusted tenant code once, in a fresh environment, within its limits, and say how it ended.
import { type Json } from '../../../abl/ir';

/** The memory-store helpers' way out of the sandbox: the host performs the call on the code's behalf. */
export interface MemoryBridge {
  /** `POST /api/v1/memory` with the call's sandbox token; resolves to the answer's `data` (null when absent), rejects with the answer's message. */
  call(action: 'get' | 'set' | 'delete', memoryStoreName: string, content?: Json): Promise<Json>;
}

export interface SandboxRun {
  /** The tool's `code: |` block, or null with `entrypoint`. */
  code: string | null;
  /** The function to call (ABL.md §5: `main(params)` if defined, else `entrypoint`, else the code is a function body). */
  entrypoint: string | null;
  params: Record<string, Json>;
  /** CPU/wall time the call may take (the tool's `timeout`, default 5000 ms). */
  timeoutMs: number;
  /** Memory the call may use (the tool's `memory_mb`, default 128). */
  memoryMb: number;
  /** Largest result (serialised JSON) and largest console output kept, in bytes. */
  maxOutputBytes: number;
  memory: MemoryBridge | null;
}

export type SandboxOutcome =
  | { ok: true; value: Json; logs: string[] }
  /**
   * `error`: the code threw (message is the exception's message, which reaches the agent);
   * `timeout`, `memory`, `output`: a limit stopped it; `unavailable`: the engine could not run it.
   */
  | { ok: false; kind: 'error' | 'timeout' | 'memory' | 'output' | 'unavailable'; message: string; logs: string[] };

export interface SandboxEngine {
  readonly runtime: 'javascript' | 'python';
  run(input: SandboxRun): Promise<SandboxOutcome>;
  /** Releases threads, processes and warm instances (worker shutdown, tests). */
  close(): Promise<void>;
}

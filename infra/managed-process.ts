// A child process under supervision: its exit as a promise, and a stop that escalates to SIGKILL.
// Every server of the local stack (Temporal, PostgreSQL, FerretDB, the API and worker) runs as one.
import { type ChildProcess } from 'node:child_process';

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  stop(timeoutMs?: number): Promise<void>;
}

export interface ManageOptions {
  /** The signal that asks for a clean stop. @default 'SIGTERM' */
  signal?: NodeJS.Signals;
}

export function manage(name: string, child: ChildProcess, options: ManageOptions = {}): ManagedProcess {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stopping: Promise<void> | null = null;
  return {
    name,
    child,
    exited,
    stop(timeoutMs = 10_000) {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill(options.signal ?? 'SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

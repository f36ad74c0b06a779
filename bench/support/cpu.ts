// CPU time per process, read from /proc (Linux only), so a bench can say where an operation's
// CPU goes: the bench process itself (client and API), the worker, Temporal and MongoDB.
import { readFileSync } from 'node:fs';

/** User + system CPU of a process in milliseconds, or null when it cannot be read. */
function processCpuMs(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces) start at field 3; utime and stime are fields 14 and 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

export type CpuSnapshot = Record<string, number>;

export class CpuMeter {
  constructor(private readonly pids: Record<string, number | undefined>) {}

  snapshot(): CpuSnapshot {
    const usage = process.cpuUsage();
    const snap: CpuSnapshot = { bench: (usage.user + usage.system) / 1000 };
    for (const [name, pid] of Object.entries(this.pids)) {
      const ms = pid === undefined ? null : processCpuMs(pid);
      if (ms !== null) snap[name] = ms;
    }
    return snap;
  }

  /** Adds the CPU spent between two snapshots to a running total (for phases timed in several rounds). */
  static accumulate(total: CpuSnapshot, before: CpuSnapshot, after: CpuSnapshot): CpuSnapshot {
    for (const name of Object.keys(after)) total[name] = (total[name] ?? 0) + after[name]! - (before[name] ?? 0);
    return total;
  }

  /** CPU milliseconds per operation for each process between two snapshots. */
  static perOp(before: CpuSnapshot, after: CpuSnapshot, ops: number): string {
    const parts = Object.keys(after).map((name) => `${name} ${((after[name]! - (before[name] ?? 0)) / ops).toFixed(1)}`);
    const total = Object.keys(after).reduce((sum, name) => sum + after[name]! - (before[name] ?? 0), 0) / ops;
    return `${parts.join(', ')}; total ${total.toFixed(1)} ms`;
  }
}

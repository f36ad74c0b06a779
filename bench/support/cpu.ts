// CPU time per process, read from /proc (Linux only), so a bench can say where an operation's
// CPU goes: the bench process itself (client and API), the worker, Temporal and MongoDB.
import { readdirSync, readFileSync } from 'node:fs';

/** A process's /proc stat fields from field 3 (state) on: the command name may hold spaces. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** User + system CPU of a process in milliseconds, or null when it cannot be read. */
function processCpuMs(pid: number): number | null {
  // utime and stime are fields 14 and 15.
  const fields = statFields(pid);
  return fields ? ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 : null;
}

/**
 * CPU of a process and all its descendants, live and exited (reaped children count in the
 * parent's cutime and cstime, fields 16 and 17): a server that forks a process per connection,
 * as PostgreSQL does.
 */
function treeCpuMs(root: number): number | null {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = Number(statFields(Number(entry))?.[1]);
    if (!Number.isNaN(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const rootFields = statFields(root);
  if (!rootFields) return null;
  let ticks = Number(rootFields[13]) + Number(rootFields[14]);
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const fields = statFields(pid);
    if (fields) ticks += Number(fields[11]) + Number(fields[12]);
    stack.push(...(children.get(pid) ?? []));
  }
  return (ticks * 1000) / 100;
}

export type CpuSnapshot = Record<string, number>;

export class CpuMeter {
  /** `{ tree: pid }` counts the process and its descendants. */
  constructor(private readonly pids: Record<string, number | { tree: number } | undefined>) {}

  snapshot(): CpuSnapshot {
    const usage = process.cpuUsage();
    const snap: CpuSnapshot = { bench: (usage.user + usage.system) / 1000 };
    for (const [name, pid] of Object.entries(this.pids)) {
      const ms = pid === undefined ? null : typeof pid === 'number' ? processCpuMs(pid) : treeCpuMs(pid.tree);
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

// Counts the MongoDB commands a bench's in-process API sends, by command and collection, with the
// time each took to answer (the driver's command monitoring: the stack must be started with
// `monitorApiCommands`). Benches take a snapshot before a phase and print what it added per operation.
import { type CommandStartedEvent, type CommandSucceededEvent, type CommandFailedEvent } from 'mongodb';
import { type AppContext } from '../../api/context';

export interface CommandTally {
  count: number;
  /** Milliseconds the store took to answer, summed. */
  ms: number;
}
export type CommandCounts = Map<string, CommandTally>;

/** Starts counting; the returned map grows as commands are answered (keyed `<command> <collection>`). */
export function countMongoCommands(ctx: AppContext): CommandCounts {
  const counts: CommandCounts = new Map();
  const keys = new Map<number, string>();
  type Emitter = {
    on(event: 'commandStarted', fn: (e: CommandStartedEvent) => void): void;
    on(event: 'commandSucceeded' | 'commandFailed', fn: (e: CommandSucceededEvent | CommandFailedEvent) => void): void;
  };
  const mongo = ctx.models.Session.db.getClient() as unknown as Emitter;
  mongo.on('commandStarted', (e) => {
    const collection = e.command[e.commandName];
    keys.set(e.requestId, `${e.commandName}${typeof collection === 'string' ? ` ${collection}` : ''}`);
  });
  const done = (e: CommandSucceededEvent | CommandFailedEvent) => {
    const key = keys.get(e.requestId);
    if (!key) return;
    keys.delete(e.requestId);
    const tally = counts.get(key) ?? { count: 0, ms: 0 };
    tally.count += 1;
    tally.ms += e.duration;
    counts.set(key, tally);
  };
  mongo.on('commandSucceeded', done);
  mongo.on('commandFailed', done);
  return counts;
}

export const snapshotCounts = (counts: CommandCounts): CommandCounts => new Map([...counts].map(([k, v]) => [k, { ...v }]));

/** What was answered since `before`. */
export function countsSince(counts: CommandCounts, before: CommandCounts): CommandCounts {
  const diff: CommandCounts = new Map();
  for (const [k, v] of counts) {
    const was = before.get(k) ?? { count: 0, ms: 0 };
    if (v.count > was.count) diff.set(k, { count: v.count - was.count, ms: v.ms - was.ms });
  }
  return diff;
}

/** Adds `more` into `total`. */
export function addCounts(total: CommandCounts, more: CommandCounts): void {
  for (const [k, t] of more) {
    const was = total.get(k) ?? { count: 0, ms: 0 };
    total.set(k, { count: was.count + t.count, ms: was.ms + t.ms });
  }
}

/** `total (command collection n, …)` per operation; with `withTime`, each one's mean answer time. */
export function perOpCounts(counts: CommandCounts, ops: number, withTime = false): string {
  const rows = [...counts].filter(([, t]) => t.count > 0).sort((a, b) => b[1].count - a[1].count);
  const total = rows.reduce((sum, [, t]) => sum + t.count, 0);
  const totalMs = rows.reduce((sum, [, t]) => sum + t.ms, 0);
  const row = ([k, t]: [string, CommandTally]) => `${k} ${(t.count / ops).toFixed(2)}${withTime ? ` @ ${(t.ms / t.count).toFixed(1)} ms` : ''}`;
  return `${(total / ops).toFixed(2)}${withTime ? `, ${(totalMs / ops).toFixed(1)} ms in the store` : ''} (${rows.map(row).join(', ')})`;
}

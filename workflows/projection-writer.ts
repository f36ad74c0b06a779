// The session's projection writer: each turn's transcript rows, trace events and the session
// summary, written to MongoDB by the `recordTurn` activity. Used only by workflows/agent-session.ts.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RecordTurnInput } from '../activities/persistence/record-turn';
import type { PendingProjection } from './definitions';
import { LOCAL_ACTIVITIES_PATCH } from './effects';
import type { TurnTrace } from './session-trace';

type TraceTurn = Pick<TurnTrace, 'events'>;

// Persistence must not give up quickly: a turn is not answered before its projection is written.
const PERSIST_RETRY = { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 30 } as const;
const { recordTurn } = wf.proxyActivities<Activities>({ startToCloseTimeout: '20 seconds', retry: PERSIST_RETRY });
// A few idempotent MongoDB writes: as a local activity the turn finishes in the same workflow
// task, with no activity task round trip through the server.
const { recordTurn: recordTurnLocally } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '20 seconds', retry: PERSIST_RETRY });

/** Runs started before this marker wrote each turn's projection before replying. */
const DEFERRED_PROJECTION_PATCH = 'deferred-projection-v1';
/**
 * Runs started before this marker could write rows in the workflow task that made them. A local
 * activity runs before its task is recorded, so a task lost with its worker had already written
 * rows that the task's next attempt, seeing a message that came in meanwhile, made differently
 * (a resumed reply shown, then numbered after that message). Now a write first waits until the
 * task that held its rows is recorded.
 */
const RECORDED_ROWS_PATCH = 'recorded-rows-v1';
const DEFAULT_PROJECTION_FLUSH_MS = 250;

export type NewMessage = { role: 'user' | 'assistant'; agent: string | null; content: string };
export type SessionSummary = RecordTurnInput['summary'];

export interface ProjectionWriterOptions {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** `SessionStartInput.projectionFlushMs`: how long rows are held before a write; 0 writes before the reply. */
  flushDelayMs?: number;
  /** What the previous run of the session handed over when it continued as new. */
  carried?: { messageSeq: number; pending?: PendingProjection; lastActivityMs?: number };
  /** The session's turn count as it stands: the turn a batched write is recorded under. */
  currentTurn(): number;
  /** The session summary as it stands when a write is sent, with the last activity's time. */
  summary(lastActivityMs: number): SessionSummary;
  /** Told of every turn's rows as they are recorded, before its summary is taken (session-insight.ts). */
  onRecord?(events: TraceTurn['events'], messages: NewMessage[]): void;
}

/**
 * Holds each turn's rows and writes them shortly after, several turns at once when they come fast:
 * the reply does not wait for MongoDB (the turn results are already durable in history, so a crash
 * before the write only delays it). Reads through the API ask for a write first (`flush`), so they
 * see every answered turn. Runs recorded before `deferred-projection-v1` replay writing each turn
 * before its reply. Writes run one at a time, in order.
 *
 * Create it where the session always has (it asks its patch marker when created), so the commands
 * of a run come in the order its history has them.
 */
export class ProjectionWriter {
  /** Rows are held and written by a timer or an explicit flush (false: each turn is written before its reply). */
  readonly deferred: boolean;
  private readonly held: boolean;
  private readonly flushDelayMs: number;
  private readonly pending: PendingProjection;
  private seq: number;
  private lastActivity: number;
  private writing = 0;
  private writes: Promise<void> = Promise.resolve();
  private flushArmed = false;
  /** Writes only rows of recorded workflow tasks (deferred runs since RECORDED_ROWS_PATCH). */
  private readonly recordedOnly: boolean;
  /** The history length of the workflow task that last held rows (null: none held in this run). */
  private heldAt: number | null = null;

  constructor(private readonly options: ProjectionWriterOptions) {
    this.flushDelayMs = options.flushDelayMs ?? DEFAULT_PROJECTION_FLUSH_MS;
    this.held = wf.patched(DEFERRED_PROJECTION_PATCH);
    this.deferred = this.held && this.flushDelayMs > 0;
    this.recordedOnly = this.deferred && wf.patched(RECORDED_ROWS_PATCH);
    this.pending = options.carried?.pending ?? { messages: [], traceEvents: [] };
    this.seq = options.carried?.messageSeq ?? 0;
    this.lastActivity = options.carried?.lastActivityMs ?? Date.now();
  }

  /** The last transcript row's sequence number. */
  get messageSeq(): number {
    return this.seq;
  }

  /** Whether nothing is held and no write is under way (a `flush` would have nothing to do). */
  get idle(): boolean {
    return this.pending.messages.length === 0 && this.pending.traceEvents.length === 0 && this.writing === 0;
  }

  /** What the next run takes over on continue-as-new: the rows not yet written (deferred runs only). */
  handOver(): { pending: PendingProjection; lastActivityMs: number } | Record<string, never> {
    return this.deferred ? { pending: this.pending, lastActivityMs: this.lastActivity } : {};
  }

  /** Arms the write of rows handed over by the previous run, if any. */
  resume(): void {
    if (this.deferred && (this.pending.messages.length > 0 || this.pending.traceEvents.length > 0)) this.armFlush();
  }

  /**
   * Records a turn's rows: held for the next write, or written now on runs before deferral. The
   * session's end is not activity: `lastActivityAt` stays at the last turn (or reset), and
   * `endedAt` says when it ended.
   */
  async record(trace: TurnTrace, messages: NewMessage[], activity = true): Promise<void> {
    if (activity) this.lastActivity = Date.now();
    this.options.onRecord?.(trace.events, messages);
    const rows = messages.map((m) => ({ ...m, seq: ++this.seq, turn: trace.turn, timestamp: new Date().toISOString() }));
    if (this.deferred) {
      this.hold(rows, trace);
      this.armFlush();
      return;
    }
    if (this.held) {
      // projectionFlushMs 0: written before the reply.
      this.hold(rows, trace);
      await this.flush();
      return;
    }
    // Runs recorded before deferral: one write per turn, before the reply.
    const { tenantId, projectId, sessionId } = this.options;
    await (wf.patched(LOCAL_ACTIVITIES_PATCH) ? recordTurnLocally : recordTurn)({
      tenantId,
      projectId,
      sessionId,
      turn: trace.turn,
      messages: rows.map(({ turn: _turn, ...m }) => m),
      traceEvents: trace.events,
      summary: this.options.summary(this.lastActivity),
    });
  }

  /**
   * Writes the held rows and the summary as they stand; writes run one at a time, in order. Rows
   * held by the workflow task under way are written once it is recorded (a 1 ms timer: the next
   * task), so no row is ever written that a lost attempt made; `now` writes them at once (the
   * session's last write, after which no message can change what the task does: the session has
   * ended and its handlers have finished).
   */
  flush(when: 'recorded' | 'now' = 'recorded'): Promise<void> {
    this.writing++;
    this.writes = this.writes.then(async () => {
      let messages: PendingProjection['messages'];
      let traceEvents: PendingProjection['traceEvents'];
      if (when === 'recorded' && this.recordedOnly && this.heldAt !== null && this.heldAt >= wf.workflowInfo().historyLength) {
        const heldMessages = this.pending.messages.length;
        const heldEvents = this.pending.traceEvents.length;
        await wf.sleep(1);
        // Rows held meanwhile (in the task the timer started) wait for the next write.
        messages = this.pending.messages.splice(0, heldMessages);
        traceEvents = this.pending.traceEvents.splice(0, heldEvents);
      } else {
        messages = this.pending.messages.splice(0);
        traceEvents = this.pending.traceEvents.splice(0);
      }
      const { tenantId, projectId, sessionId } = this.options;
      try {
        await recordTurnLocally({
          tenantId,
          projectId,
          sessionId,
          turn: this.options.currentTurn(),
          // Rows this attempt of the workflow task writes replace any an abandoned attempt wrote.
          historyLength: wf.workflowInfo().historyLength,
          messages,
          traceEvents,
          summary: this.options.summary(this.lastActivity),
        });
      } catch (err) {
        // Retries are exhausted (MongoDB down for minutes): keep the rows and try again later.
        this.pending.messages.unshift(...messages);
        this.pending.traceEvents.unshift(...traceEvents);
        wf.log.warn('Session projection write failed; retrying later', { error: String(err) });
        this.armFlush();
      } finally {
        this.writing--;
      }
    });
    return this.writes;
  }

  /**
   * Before continue-as-new: writes what is held unless the workflow task under way holds rows,
   * which then go to the next run with the rest (`handOver`) rather than wait for a later task,
   * during which more turns could arrive and put the roll-over off again.
   */
  flushBeforeRollOver(): Promise<void> {
    if (this.recordedOnly && this.heldAt !== null && this.heldAt >= wf.workflowInfo().historyLength) return this.writes;
    return this.flush();
  }

  private hold(rows: PendingProjection['messages'], trace: TurnTrace): void {
    this.heldAt = wf.workflowInfo().historyLength;
    this.pending.messages.push(...rows);
    this.pending.traceEvents.push(...trace.events.map((e) => ({ ...e, turn: trace.turn })));
  }

  private armFlush(): void {
    if (this.flushArmed) return;
    this.flushArmed = true;
    void wf
      .sleep(this.flushDelayMs)
      .then(() => {
        this.flushArmed = false;
        return this.flush();
      })
      .catch(() => undefined);
  }
}

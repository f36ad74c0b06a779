// The store of streamed agent turns (db/turn-stream.ts): the API opens a turn's stream, writes its
// `turn` event and, when the workflow update answers, its final `response` or `error`; the LLM
// activity appends the reply's text as `delta` events, batched (TurnDeltaPublisher); any API
// process reads them back by number. Numbers are taken as last + 1 and claimed by the event's
// unique id, so two writers never share one and a reader never sees a gap.
import { randomBytes } from 'node:crypto';
import { type Models } from '../../db/models';
import { ensureTurnStreamTtlIndexes, type TurnStreamDoc, type TurnStreamEventDoc } from '../../db/turn-stream';
import { isDuplicateKey } from '../../db/duplicate-key';

/** How long a turn's events are kept after its final event. */
export const TURN_STREAM_RETENTION_MS = 15 * 60_000;
/** How long they are kept from their writing while the turn has no final event yet. */
export const TURN_STREAM_RUNNING_RETENTION_MS = 60 * 60_000;

export type TurnStreamModels = Pick<Models, 'TurnStream' | 'TurnStreamEvent'>;
export type TurnEventName = TurnStreamEventDoc['event'];

/** One event as the stream sends it: `id: <seq>`, `event: <event>`, `data: <data>`. */
export interface TurnEvent {
  seq: number;
  event: TurnEventName;
  data: Record<string, unknown>;
}

/** What every read and write of a turn's events is scoped by. */
export interface TurnStreamOwner {
  tenantId: string;
  sessionId: string;
  turnId: string;
}

/** `trn_` and 128 random bits: unguessable, so the id alone never grants anything either. */
export function newTurnId(): string {
  return `trn_${randomBytes(16).toString('base64url')}`;
}

export const isFinalEvent = (event: TurnEventName): boolean => event === 'response' || event === 'error';

/** This process's readers waiting on a turn's next write (others poll: the writer may be elsewhere). */
const waiting = new Map<string, Set<() => void>>();

/** Wakes this process's readers of the turn. */
export function wakeTurnReaders(turnId: string): void {
  for (const wake of [...(waiting.get(turnId) ?? [])]) wake();
}

/** Resolves at the turn's next write in this process, or after `timeoutMs` (a write elsewhere). */
export function nextTurnWrite(turnId: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let readers = waiting.get(turnId);
    if (!readers) waiting.set(turnId, (readers = new Set()));
    const set = readers;
    const done = () => {
      clearTimeout(timer);
      set.delete(done);
      if (set.size === 0 && waiting.get(turnId) === set) waiting.delete(turnId);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    set.add(done);
  });
}

const sweptAt = new WeakMap<object, Map<string, number>>();
const SWEEP_EVERY_MS = 60_000;

/**
 * Deletes a tenant's expired turns and events, at most once a minute per process and tenant: the
 * store may have no TTL index (FerretDB), and reads skip expired turns anyway.
 */
function sweepExpired(models: TurnStreamModels, tenantId: string): void {
  let byTenant = sweptAt.get(models.TurnStream.db);
  if (!byTenant) sweptAt.set(models.TurnStream.db, (byTenant = new Map()));
  const now = Date.now();
  if ((byTenant.get(tenantId) ?? 0) > now - SWEEP_EVERY_MS) return;
  byTenant.set(tenantId, now);
  const expired = { tenantId, expiresAt: { $lt: new Date(now) } };
  void Promise.all([models.TurnStream.deleteMany(expired), models.TurnStreamEvent.deleteMany(expired)]).catch(() => byTenant.delete(tenantId));
}

/** Records a new streamed turn and its `turn` event (number 0). */
export async function openTurnStream(
  models: TurnStreamModels,
  turn: Omit<TurnStreamDoc, 'finishedAt' | 'expiresAt' | 'createdAt'>,
  data: Record<string, unknown>,
): Promise<TurnEvent> {
  void ensureTurnStreamTtlIndexes(models);
  sweepExpired(models, turn.tenantId);
  const expiresAt = new Date(Date.now() + TURN_STREAM_RUNNING_RETENTION_MS);
  const event: TurnEvent = { seq: 0, event: 'turn', data };
  // Two collections, no order between them: one round trip.
  await Promise.all([
    models.TurnStream.collection.insertOne({ ...turn, finishedAt: null, expiresAt, createdAt: new Date() } as never),
    models.TurnStreamEvent.collection.insertOne({
      _id: `${turn._id}:0`,
      tenantId: turn.tenantId,
      sessionId: turn.sessionId,
      turnId: turn._id,
      ...event,
      part: null,
      expiresAt,
    } as never),
  ]);
  wakeTurnReaders(turn._id);
  return event;
}

const ownerFilter = (owner: TurnStreamOwner) => ({ tenantId: owner.tenantId, sessionId: owner.sessionId, turnId: owner.turnId });

/** The turn's events numbered above `after`, in order. */
export async function readTurnEvents(models: TurnStreamModels, owner: TurnStreamOwner, after: number): Promise<TurnEvent[]> {
  const docs = (await models.TurnStreamEvent.collection
    .find({ ...ownerFilter(owner), seq: { $gt: after } } as never, { projection: { _id: 0, seq: 1, event: 1, data: 1 } })
    .sort({ seq: 1 })
    .toArray()) as unknown as TurnEvent[];
  return docs;
}

/** All of the turn's events with the call that wrote each delta (for a retried call's reset). */
async function readForPublisher(models: TurnStreamModels, owner: TurnStreamOwner): Promise<Pick<TurnStreamEventDoc, 'seq' | 'event' | 'data' | 'part'>[]> {
  return (await models.TurnStreamEvent.collection
    .find(ownerFilter(owner) as never, { projection: { _id: 0, seq: 1, event: 1, data: 1, part: 1 } })
    .sort({ seq: 1 })
    .toArray()) as unknown as Pick<TurnStreamEventDoc, 'seq' | 'event' | 'data' | 'part'>[];
}

async function lastSeq(models: TurnStreamModels, owner: TurnStreamOwner): Promise<number> {
  const last = await models.TurnStreamEvent.collection.find(ownerFilter(owner) as never, { projection: { _id: 0, seq: 1 } }).sort({ seq: -1 }).limit(1).next();
  return (last as { seq?: number } | null)?.seq ?? -1;
}

/**
 * Appends one event with the next number. A final event has the id `<turnId>:final`: when another
 * writer (a second API process re-attaching to the same update) wrote it first, that one is
 * answered instead, so a turn has exactly one.
 */
export async function appendTurnEvent(
  models: TurnStreamModels,
  owner: TurnStreamOwner,
  event: TurnEventName,
  data: Record<string, unknown>,
  options: { part?: string; expiresAt?: Date; afterSeq?: number } = {},
): Promise<TurnEvent> {
  const final = isFinalEvent(event);
  let seq = (options.afterSeq ?? (await lastSeq(models, owner))) + 1;
  for (let attempt = 0; ; attempt++) {
    try {
      await models.TurnStreamEvent.collection.insertOne({
        _id: final ? `${owner.turnId}:final` : `${owner.turnId}:${seq}`,
        ...ownerFilter(owner),
        seq,
        event,
        data,
        part: options.part ?? null,
        expiresAt: options.expiresAt ?? new Date(Date.now() + TURN_STREAM_RUNNING_RETENTION_MS),
      } as never);
      wakeTurnReaders(owner.turnId);
      return { seq, event, data };
    } catch (err) {
      if (!isDuplicateKey(err) || attempt >= 20) throw err;
      if (final) {
        const earlier = (await models.TurnStreamEvent.collection.findOne({ _id: `${owner.turnId}:final`, tenantId: owner.tenantId } as never)) as TurnStreamEventDoc | null;
        if (earlier) return { seq: earlier.seq, event: earlier.event, data: earlier.data };
      }
      seq = (await lastSeq(models, owner)) + 1;
    }
  }
}

/**
 * Writes the turn's final event (or finds the one written first) and keeps the turn and all its
 * events for TURN_STREAM_RETENTION_MS from now.
 */
export async function finishTurnStream(
  models: TurnStreamModels,
  owner: TurnStreamOwner,
  event: 'response' | 'error',
  data: Record<string, unknown>,
  options: { afterSeq?: number } = {},
): Promise<TurnEvent> {
  const now = Date.now();
  const expiresAt = new Date(now + TURN_STREAM_RETENTION_MS);
  const written = await appendTurnEvent(models, owner, event, data, { expiresAt, ...options });
  await Promise.all([
    models.TurnStream.collection.updateOne({ _id: owner.turnId, tenantId: owner.tenantId } as never, { $set: { finishedAt: new Date(now), expiresAt } }),
    models.TurnStreamEvent.collection.updateMany(ownerFilter(owner) as never, { $set: { expiresAt } }),
  ]);
  return written;
}

/** The text a client shows after these deltas: appended, except that `reset` replaces. */
export function foldDeltas(deltas: readonly { data: Record<string, unknown> }[]): string {
  let text = '';
  for (const { data } of deltas) {
    const piece = typeof data.text === 'string' ? data.text : '';
    text = data.reset === true ? piece : text + piece;
  }
  return text;
}

/** Replies of one turn are joined by a blank line, as the final `response` joins them. */
const REPLY_SEPARATOR = '\n\n';

/** Where a publisher's store failures go: the deltas are for display, the call goes on. */
type PublisherLog = { warn(fields: Record<string, unknown>, message: string): void };

/**
 * The deltas of one LLM call (one `part`) of a streamed turn, written in batches: the first piece
 * at once (time to first text), then at most one write per `flushMs` or per `maxChars`, never one
 * per token. A call that runs again (an activity retry, or a re-run after a worker crash) finds
 * its earlier deltas and starts with `reset: true`: its first delta carries the whole text the
 * client should show (the turn's earlier replies and its own first piece), so text is never
 * doubled. A call whose answer is not a reply (it asked for tools) resets the text it added, when
 * it is done. Store failures are logged and the deltas dropped: the final `response` is what counts.
 */
export class TurnDeltaPublisher {
  private buffer = '';
  private published = false;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private inFlight = false;
  private seq = -1;
  private failed = false;
  /** The text shown before this call, whether this call wrote deltas before (a re-run), and the last number. */
  private readonly before: Promise<{ text: string; rerun: boolean; lastSeq: number }>;

  constructor(
    private readonly models: TurnStreamModels,
    private readonly owner: TurnStreamOwner,
    private readonly part: string,
    private readonly log?: PublisherLog,
    private readonly options: { flushMs: number; maxChars: number } = { flushMs: 50, maxChars: 512 },
  ) {
    // Read while the model starts answering; the first write waits for it.
    this.before = readForPublisher(models, owner).then((events) => {
      const deltas = events.filter((e) => e.event === 'delta');
      const mineAt = deltas.findIndex((d) => d.part === part);
      const earlier = mineAt < 0 ? deltas : deltas.slice(0, mineAt);
      return { text: foldDeltas(earlier.filter((d) => d.part !== part)), rerun: mineAt >= 0, lastSeq: events.at(-1)?.seq ?? 0 };
    });
    this.before.catch(() => undefined);
  }

  /** Adds generated text; written now or with the next batch. */
  push(text: string): void {
    if (!text || this.failed) return;
    this.buffer += text;
    if (this.inFlight) return;
    if (!this.published || this.buffer.length >= this.options.maxChars) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs);
  }

  /** Writes what is left; `notAReply`: the call's text is not part of the reply (it asked for tools). */
  async close(options: { notAReply?: boolean } = {}): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.writing;
    if (this.buffer) {
      this.flush();
      await this.writing;
    }
    if (options.notAReply && this.published && !this.failed) {
      await this.write(async () => ({ text: (await this.before).text, reset: true }));
    }
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.buffer || this.failed) return;
    const first = !this.published;
    this.published = true;
    void this.write(async () => {
      // The batch is what has come by the time the write goes out (the first waits for the read).
      const before = first ? await this.before : null;
      const piece = this.buffer;
      this.buffer = '';
      if (!before) return { text: piece };
      const separator = before.text ? REPLY_SEPARATOR : '';
      return before.rerun ? { text: before.text + separator + piece, reset: true } : { text: separator + piece };
    }).then(() => {
      if (this.buffer && !this.timer) this.timer = setTimeout(() => this.flush(), this.options.flushMs);
    });
  }

  private write(data: () => Promise<Record<string, unknown>>): Promise<void> {
    this.inFlight = true;
    this.writing = this.writing
      .then(async () => {
        const body = await data();
        if (this.seq < 0) this.seq = (await this.before).lastSeq;
        const written = await appendTurnEvent(this.models, this.owner, 'delta', body, { part: this.part, afterSeq: this.seq });
        this.seq = written.seq;
      })
      .catch((err: unknown) => {
        this.failed = true;
        this.log?.warn({ err, turnId: this.owner.turnId }, 'could not store a streamed turn delta; the turn goes on without them');
      })
      .finally(() => {
        this.inFlight = false;
      });
    return this.writing;
  }
}

// Streamed agent turns (POST /api/v1/chat/agent/stream): one `turn_streams` record per streamed
// turn, naming its owner (tenant, project, session, environment, SDK end user) and the workflow
// update that runs it, and its events in `turn_stream_events` (`turn`, `delta`, `response`,
// `error`, numbered by `seq` from 0). The worker's LLM activity appends deltas, the API the rest;
// any API process replays them. Both expire (`expiresAt`): MongoDB removes them through TTL
// indexes, and since its monitor runs once a minute and the dev store (FerretDB) has no TTL
// indexes at all, reads skip expired rows and new turns delete them (core/chat/turn-stream.ts).
import { Schema, type Connection, type Model } from 'mongoose';
import { ensureExpiresAtTtlIndex } from './ttl-index';

export interface TurnStreamDoc {
  /** The turn's id (`trn_` and 128 random bits): what a client reconnects with. */
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The session's environment when known at the start (else read from the session when needed). */
  environment: string | null;
  /** An SDK end user's `channelUId` (`sdk:<endUserId>`); null for other credentials. */
  channelUId: string | null;
  /** The AgentSession workflow and the `turn` update's id, to re-attach to its result. */
  workflowId: string;
  updateId: string;
  isNewSession: boolean;
  /** When the final event (`response` or `error`) was written; null while the turn runs. */
  finishedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
}

export interface TurnStreamEventDoc {
  /** `<turnId>:<seq>`, except the final event: `<turnId>:final`, so a turn has one. */
  _id: string;
  tenantId: string;
  /** Carried so the store's indexed `sessionId` narrows every read to one session's events. */
  sessionId: string;
  turnId: string;
  seq: number;
  event: 'turn' | 'delta' | 'response' | 'error';
  data: Record<string, unknown>;
  /** For a delta: the LLM call that produced it (`<workflowId>:<runId>:<activityId>`), for retries. */
  part: string | null;
  expiresAt: Date;
}

const TurnStreamSchema = new Schema<TurnStreamDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    environment: { type: String, default: null },
    channelUId: { type: String, default: null },
    workflowId: { type: String, required: true },
    updateId: { type: String, required: true },
    isNewSession: { type: Boolean, default: false },
    finishedAt: { type: Date, default: null },
    expiresAt: { type: Date, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);

const TurnStreamEventSchema = new Schema<TurnStreamEventDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    sessionId: { type: String, required: true },
    turnId: { type: String, required: true },
    seq: { type: Number, required: true },
    event: { type: String, required: true },
    data: { type: Schema.Types.Mixed, default: {} },
    part: { type: String, default: null },
    expiresAt: { type: Date, required: true },
  },
  { versionKey: false, minimize: false },
);
// One event per number: two writers racing for a number cannot both have it.
TurnStreamEventSchema.index({ turnId: 1, seq: 1 }, { unique: true });

export type TurnStreamModel = Model<TurnStreamDoc>;
export type TurnStreamEventModel = Model<TurnStreamEventDoc>;
export const TURN_STREAMS_COLLECTION = 'turn_streams';
export const TURN_STREAM_EVENTS_COLLECTION = 'turn_stream_events';
export const turnStreamModel = (c: Connection): TurnStreamModel => c.model<TurnStreamDoc>('TurnStream', TurnStreamSchema, TURN_STREAMS_COLLECTION);
export const turnStreamEventModel = (c: Connection): TurnStreamEventModel =>
  c.model<TurnStreamEventDoc>('TurnStreamEvent', TurnStreamEventSchema, TURN_STREAM_EVENTS_COLLECTION);

/**
 * TTL indexes on `expiresAt` of both collections, created once per connection (db/ttl-index.ts).
 * Stores without TTL indexes (FerretDB answers NotImplemented) rely on the deletes of new turns.
 */
export function ensureTurnStreamTtlIndexes(models: { TurnStream: TurnStreamModel; TurnStreamEvent: TurnStreamEventModel }): Promise<void> {
  return Promise.all([ensureExpiresAtTtlIndex(models.TurnStream), ensureExpiresAtTtlIndex(models.TurnStreamEvent)]).then(() => undefined);
}

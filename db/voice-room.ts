// Real-time voice rooms (docs/voice.md): one document per voice session, `_id` its session id,
// written when the room is made on LiveKit and marked ended when it closes; and the deployment's
// count of open rooms, checked against VOICE_MAX_ROOMS on every create.
//
// The count is one document (`voice_room_count`, `_id` `global`: the cap is the deployment's, not
// a tenant's, so it holds no tenant data). A create increments it only where it stays within the
// cap (the filter `{ active: { $lte: cap - 1 } }` of one update: atomic on MongoDB and on the dev
// store); a room gives its place back when its status goes from `active` to `ended` (one
// conditional update, so however many paths see it end, one decrement follows) or when a create
// that failed removes its active document. A process dying between the increment and the
// document leaves the count too high, never too low: a room may be refused early, never let past
// the cap.
import { Schema, type Connection, type Model } from 'mongoose';
import { type Models } from './models';
import { driverCollection } from './driver-collection';

export const VOICE_ROOM_STATUSES = ['active', 'ended'] as const;
export type VoiceRoomStatus = (typeof VOICE_ROOM_STATUSES)[number];

export interface VoiceRoomDoc {
  /** The session id. */
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The LiveKit room's name. */
  roomName: string;
  agentId: string | null;
  agentName: string;
  environment: string;
  /** The caller's participant identity in the room. */
  identity: string;
  status: VoiceRoomStatus;
  /** Why it closed: `session_ended`, `deleted`, `caller_left`, `empty_timeout`, `api`, … */
  endReason: string | null;
  createdAt: Date;
  endedAt: Date | null;
  /** Whether the room's audio is recorded. */
  recording: boolean;
}

const VoiceRoomSchema = new Schema<VoiceRoomDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    roomName: { type: String, required: true },
    agentId: { type: String, default: null },
    agentName: { type: String, required: true },
    environment: { type: String, required: true },
    identity: { type: String, required: true },
    status: { type: String, enum: VOICE_ROOM_STATUSES, required: true },
    endReason: { type: String, default: null },
    createdAt: { type: Date, required: true },
    endedAt: { type: Date, default: null },
    recording: { type: Boolean, default: false },
  },
  { versionKey: false },
);
VoiceRoomSchema.index({ tenantId: 1, projectId: 1, status: 1 });
VoiceRoomSchema.index({ status: 1 });

export type VoiceRoomModel = Model<VoiceRoomDoc>;
export const voiceRoomModel = (c: Connection): VoiceRoomModel => c.model<VoiceRoomDoc>('VoiceRoom', VoiceRoomSchema, 'voice_rooms');

// ------------------------------------------------------------------ the count of open rooms

interface VoiceRoomCountDoc {
  _id: 'global';
  active: number;
  at: Date;
}

const COUNT_ID = 'global' as const;
const counts = (models: Pick<Models, 'connection'>) => models.connection.collection<VoiceRoomCountDoc>('voice_room_count');
const isDuplicateKey = (err: unknown) => typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;

/** Takes a place among the `cap` open rooms; false when all are taken. */
export async function acquireVoiceRoomPlace(models: Pick<Models, 'connection'>, cap: number): Promise<boolean> {
  const filter = { _id: COUNT_ID, active: { $lte: cap - 1 } };
  const update = () => ({ $inc: { active: 1 }, $set: { at: new Date() } });
  try {
    await counts(models).updateOne(filter, update(), { upsert: true });
    return true;
  } catch (err) {
    // The document exists at the cap (the upsert's insert collided), or was written meanwhile.
    if (!isDuplicateKey(err)) throw err;
  }
  return (await counts(models).updateOne(filter, update())).matchedCount === 1;
}

/** Gives a place back (never below 0). */
export async function releaseVoiceRoomPlace(models: Pick<Models, 'connection'>): Promise<void> {
  await counts(models).updateOne({ _id: COUNT_ID, active: { $gte: 1 } }, { $inc: { active: -1 }, $set: { at: new Date() } });
}

/** Sets the count from one value to another; false when it was no longer `from` (someone changed it meanwhile). */
export async function setOpenVoiceRooms(models: Pick<Models, 'connection'>, change: { from: number; to: number }): Promise<boolean> {
  const { matchedCount } = await counts(models).updateOne({ _id: COUNT_ID, active: change.from }, { $set: { active: Math.max(0, change.to), at: new Date() } });
  return matchedCount === 1;
}

/** Open rooms as the count has them. */
export async function openVoiceRooms(models: Pick<Models, 'connection'>): Promise<number> {
  return (await counts(models).findOne({ _id: COUNT_ID }))?.active ?? 0;
}

/**
 * Marks the room ended with its reason and gives its place back; true for the one call that
 * ended it (a room already ended, or gone, changes nothing).
 */
export async function endVoiceRoomRecord(models: Pick<Models, 'connection' | 'VoiceRoom'>, room: { tenantId: string; sessionId: string }, reason: string): Promise<boolean> {
  const { modifiedCount } = await driverCollection(models.VoiceRoom).updateOne(
    { _id: room.sessionId, tenantId: room.tenantId, status: 'active' },
    { $set: { status: 'ended', endReason: reason, endedAt: new Date() } },
  );
  if (modifiedCount !== 1) return false;
  await releaseVoiceRoomPlace(models);
  return true;
}

/** Removes the record of a room whose create failed, giving its place back if it held one. */
export async function discardVoiceRoomRecord(models: Pick<Models, 'connection' | 'VoiceRoom'>, room: { tenantId: string; sessionId: string }): Promise<void> {
  const { deletedCount } = await driverCollection(models.VoiceRoom).deleteOne({ _id: room.sessionId, tenantId: room.tenantId, status: 'active' });
  if (deletedCount === 1) await releaseVoiceRoomPlace(models);
  else await driverCollection(models.VoiceRoom).deleteOne({ _id: room.sessionId, tenantId: room.tenantId });
}

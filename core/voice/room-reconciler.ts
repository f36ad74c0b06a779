// Keeps the count of open voice rooms (db/voice-room.ts: the global VOICE_MAX_ROOMS cap) true to
// the rooms that are open. A process that stops between taking a place and writing the room's
// record leaks a place; one that stops after writing the record but before starting the room's
// VoiceRoom workflow leaves a record nothing will close. Every VOICE_ROOM_RECONCILE_MS each API
// process closes records older than ORPHAN_AFTER_MS whose workflow is not running, then compares
// the count with the active records: a difference seen the same in two runs in a row (so not a
// room being made at that moment) is set right, by a compare-and-set on the count that several
// processes can run at once. A system sweep: each room is then closed with its own tenant.
import { type Client } from '@temporalio/client';
import { type Models } from '../../db/models';
import { openVoiceRooms, setOpenVoiceRooms } from '../../db/voice-room';
import { runPeriodically } from '../../lib/periodic';
import { isWorkflowNotFound } from '../sessions/workflow-client';
import { voiceRoomWorkflowId } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { closeVoiceRoom } from './rooms';

/** A room record this old whose workflow is not running was left by a stopped process. */
export const ORPHAN_AFTER_MS = 5 * 60 * 1000;
/** Delay of the first run after the process starts. */
const FIRST_RUN_MS = 30_000;

export interface VoiceRoomReconciliation {
  /** Records closed because their workflow was not running. */
  orphansClosed: number;
  /** The count before and after; equal when nothing was set right. */
  count: { before: number; after: number };
  /** Active records after the orphans were closed. */
  activeRooms: number;
}

/** What the previous run saw (count, active records), for the two-runs rule. */
export interface ReconcilerMemory {
  seen: { count: number; rooms: number } | null;
}

async function workflowRunning(client: Client, sessionId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(voiceRoomWorkflowId(sessionId)).describe()).status.name === 'RUNNING';
  } catch (err) {
    if (isWorkflowNotFound(err)) return false;
    throw err;
  }
}

export async function reconcileVoiceRooms(
  deps: { config: CoreContext['config']; models: Models; temporalClient: Client },
  memory: ReconcilerMemory,
  now = Date.now(),
): Promise<VoiceRoomReconciliation> {
  let orphansClosed = 0;
  const old = await deps.models.VoiceRoom.find({ status: 'active', createdAt: { $lt: new Date(now - ORPHAN_AFTER_MS) } })
    .select({ _id: 1, tenantId: 1, sessionId: 1, roomName: 1 })
    .lean();
  for (const room of old) {
    if (await workflowRunning(deps.temporalClient, room.sessionId)) continue;
    const closed = await closeVoiceRoom(deps, { tenantId: room.tenantId, sessionId: room.sessionId, roomName: room.roomName, reason: 'abandoned' });
    if (closed.ended) orphansClosed++;
  }
  const rooms = await deps.models.VoiceRoom.countDocuments({ status: 'active' });
  const before = await openVoiceRooms(deps.models);
  let after = before;
  const same = memory.seen !== null && memory.seen.count === before && memory.seen.rooms === rooms;
  if (before !== rooms && same && (await setOpenVoiceRooms(deps.models, { from: before, to: rooms }))) after = rooms;
  memory.seen = { count: after, rooms };
  return { orphansClosed, count: { before, after }, activeRooms: rooms };
}

export function startVoiceRoomReconciler(ctx: CoreContext): () => void {
  const every = ctx.config.VOICE_ROOM_RECONCILE_MS;
  const memory: ReconcilerMemory = { seen: null };
  return runPeriodically(
    every,
    Math.min(every, FIRST_RUN_MS),
    async () => {
      const result = await reconcileVoiceRooms({ config: ctx.config, models: ctx.models, temporalClient: await ctx.temporal.client() }, memory);
      if (result.orphansClosed > 0 || result.count.after !== result.count.before) ctx.logger.warn(result, 'voice rooms reconciled: rooms or places a stopped process left were given back');
    },
    (err) => ctx.logger.warn({ err }, 'voice room reconciliation failed; it runs again at the next interval'),
  );
}

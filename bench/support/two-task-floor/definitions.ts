// The updates of the two-task floor's workflow, shared by the workflow and the bench that sends them.
import { defineUpdate } from '@temporalio/workflow';

/** A message with a reply: accepted by one workflow task, which schedules the reply's POST as an activity. */
export const floorMessageUpdate = defineUpdate<{ n: number }, [{ n: number; url: string }]>('floorMessage');
/** A turn: answered by one workflow task, nothing scheduled. */
export const floorTurnUpdate = defineUpdate<{ n: number }, [{ n: number }]>('floorTurn');

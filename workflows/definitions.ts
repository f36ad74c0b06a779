// Every update, signal and query of every workflow: the contract the API and the workflows share.
// Named <verb><Kind>; one input type per message.
import { defineUpdate, defineQuery } from '@temporalio/workflow';

/** Probe: a workflow that only answers a no-op update; the bare-Temporal baseline of the benches. */
export interface PingUpdateInput {
  n: number;
}
export const pingUpdate = defineUpdate<{ n: number; count: number }, [PingUpdateInput]>('ping');
export const probeStateQuery = defineQuery<{ count: number }>('probeState');
export const stopProbeUpdate = defineUpdate<void>('stopProbe');

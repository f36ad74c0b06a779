// The `parallel-tool-calls-v1` patch: runs recorded before it executed the tool calls of one LLM
// answer one after another, and must replay that way. The interpreter asks only when an answer
// has several ordinary tool calls, so runs that never have one record no marker.
import { patchDecidedOnce } from './patches';

export const PARALLEL_TOOL_CALLS_PATCH = 'parallel-tool-calls-v1';

/** The interpreter's `parallelToolCalls` option for one workflow run (see patchDecidedOnce). */
export function parallelToolCallsOption(): () => boolean {
  return patchDecidedOnce(PARALLEL_TOOL_CALLS_PATCH);
}

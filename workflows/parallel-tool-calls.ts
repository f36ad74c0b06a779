// The `parallel-tool-calls-v1` patch: runs recorded before it executed the tool calls of one LLM
// answer one after another, and must replay that way. The interpreter asks only when an answer
// has several ordinary tool calls, so runs that never have one record no marker.
import * as wf from '@temporalio/workflow';

export const PARALLEL_TOOL_CALLS_PATCH = 'parallel-tool-calls-v1';

/**
 * The interpreter's `parallelToolCalls` option for one workflow run. The first answer is kept for
 * the rest of the run: a turn is replayed by the interpreter each time a result arrives, and
 * `patched` (false while replaying an old run) turns true once replay reaches live execution,
 * which would switch a turn begun sequentially to the parallel path halfway through.
 */
export function parallelToolCallsOption(): () => boolean {
  let decided: boolean | undefined;
  return () => (decided ??= wf.patched(PARALLEL_TOOL_CALLS_PATCH));
}

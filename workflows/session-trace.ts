// Builds the trace events of one turn with deterministic span ids: every event of turn N hangs
// under the turn's root span `tN`; a tool_result hangs under its tool_call. A tool_result's
// output is replaced by what the interpreter's `tool_output` guardrails left of it.
import type { TraceDraft } from '../abl/runtime/contract';
import type { TraceEventOut } from './definitions';

export class TurnTrace {
  readonly events: (TraceEventOut & { seq: number })[] = [];
  readonly rootSpan: string;
  private local = 0;
  /** The data of each tool_result event, by the command it answered. */
  private readonly toolResults = new Map<string, Record<string, unknown>>();

  constructor(
    readonly turn: number,
    private seq: number,
    rootSpan?: string,
  ) {
    this.rootSpan = rootSpan ?? `t${turn}`;
  }

  /** Adopts events recorded elsewhere (a delegated child's), renumbering their sequence. */
  adopt(events: TraceEventOut[]): void {
    for (const event of events) this.events.push({ ...event, seq: this.seq++ });
  }

  get nextSeq(): number {
    return this.seq;
  }

  add(type: string, data: Record<string, unknown>, parentSpanId: string | null = this.rootSpan): string {
    const spanId = `${this.rootSpan}.${++this.local}`;
    this.events.push({ seq: this.seq++, type, spanId, parentSpanId, timestamp: new Date().toISOString(), data });
    return spanId;
  }

  /** A tool's result, which a later `tool_output_guarded` draft of its command may rewrite. */
  addToolResult(commandId: string, data: Record<string, unknown>, parentSpanId: string): string {
    this.toolResults.set(commandId, data);
    return this.add('tool_result', data, parentSpanId);
  }

  addDrafts(drafts: TraceDraft[]): void {
    for (const draft of drafts) {
      if (draft.type === 'tool_output_guarded') {
        const result = this.toolResults.get(draft.data.commandId);
        if (!result) continue;
        if (draft.data.blocked) {
          delete result.output;
          result.outputWithheld = 'blocked by a tool_output guardrail';
        } else {
          result.output = draft.data.output;
          result.outputRedacted = true;
        }
        continue;
      }
      const data: Record<string, unknown> = { ...draft.data };
      if (draft.type === 'handoff') data.timestamp = new Date().toISOString();
      this.add(draft.type, data);
    }
  }
}

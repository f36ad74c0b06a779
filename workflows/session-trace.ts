// Builds the trace events of one turn with deterministic span ids: every event of turn N hangs
// under the turn's root span `tN`; a tool_result hangs under its tool_call.
import type { TraceDraft } from '../abl/runtime/contract';
import type { TraceEventOut } from './definitions';

export class TurnTrace {
  readonly events: (TraceEventOut & { seq: number })[] = [];
  readonly rootSpan: string;
  private local = 0;

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

  addDrafts(drafts: TraceDraft[]): void {
    for (const draft of drafts) {
      const data: Record<string, unknown> = { ...draft.data };
      if (draft.type === 'handoff') data.timestamp = new Date().toISOString();
      this.add(draft.type, data);
    }
  }
}

// Circuit-breaker state of HTTP tools (`circuit_breaker {threshold, reset_ms}`), one document per
// tenant, project and tool, shared by every worker: failures in a row and, once they reach the
// threshold, until when calls fail fast. Addressed by `_id` alone, as FerretDB prefers.
import { Schema, type Connection, type Model } from 'mongoose';

export interface ToolCircuitDoc {
  /** JSON of [tenantId, projectId, tool]. */
  _id: string;
  tenantId: string;
  projectId: string;
  tool: string;
  /** Failed calls in a row (a success sets it back to 0). */
  failures: number;
  /** While in the future, calls fail without being sent. */
  openUntil: Date | null;
  updatedAt: Date;
}

const ToolCircuitSchema = new Schema<ToolCircuitDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    tool: { type: String, required: true },
    failures: { type: Number, required: true, default: 0 },
    openUntil: { type: Date, default: null },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
ToolCircuitSchema.index({ tenantId: 1, projectId: 1 });

export type ToolCircuitModel = Model<ToolCircuitDoc>;
export const toolCircuitModel = (c: Connection): ToolCircuitModel => c.model<ToolCircuitDoc>('ToolCircuit', ToolCircuitSchema, 'tool_circuits');

export const toolCircuitId = (tenantId: string, projectId: string, tool: string): string => JSON.stringify([tenantId, projectId, tool]);

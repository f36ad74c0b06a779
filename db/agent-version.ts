// Agent versions: immutable snapshots of a compiled draft. Written once by the version service,
// never updated. The IR is stored as a JSON string: it is read whole, never queried, and user
// keys inside it (headers, phase-2 sections) may hold characters MongoDB field names reject.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface AgentVersionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  agentId: string;
  agentName: string;
  /** Label such as `1.0.0`, unique per agent. */
  version: string;
  /** 1, 2, 3… per agent, in creation order; "latest" is the highest. */
  seq: number;
  irVersion: number;
  /** JSON of the agent's AgentIR. */
  irJson: string;
  /** SHA-256 of the agent file and the tool libraries it imports (AgentIR metadata.source_hash). */
  sourceHash: string;
  /** Snapshot of the draft that was compiled. */
  dslContent: string;
  /** Snapshot of the tool library files the agent imports, path → content. */
  toolSources: Array<{ path: string; content: string }>;
  /** Warnings reported when the version was made (errors block creation). */
  diagnosticsJson: string;
  changelog: string | null;
  createdBy: string | null;
  createdAt: Date;
}

const AgentVersionSchema = new Schema<AgentVersionDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    agentId: { type: String, required: true },
    agentName: { type: String, required: true },
    version: { type: String, required: true, maxlength: 64 },
    seq: { type: Number, required: true },
    irVersion: { type: Number, required: true },
    irJson: { type: String, required: true },
    sourceHash: { type: String, required: true },
    dslContent: { type: String, required: true },
    toolSources: { type: [{ _id: false, path: String, content: String }], default: [] },
    diagnosticsJson: { type: String, default: '[]' },
    changelog: { type: String, default: null, maxlength: 5000 },
    createdBy: { type: String, default: null },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
AgentVersionSchema.index({ agentId: 1, version: 1 }, { unique: true });
AgentVersionSchema.index({ agentId: 1, seq: 1 }, { unique: true });
AgentVersionSchema.index({ tenantId: 1, projectId: 1, agentId: 1, seq: -1 });

export type AgentVersionModel = Model<AgentVersionDoc>;
export const agentVersionModel = (c: Connection): AgentVersionModel =>
  c.model<AgentVersionDoc>('AgentVersion', AgentVersionSchema, 'agent_versions');

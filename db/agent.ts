// Agents: one per name per project, holding the mutable draft (`dslContent`). Versions live in
// agent_versions; `activeVersions` is the projection that deployments write (environment → version).
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface AgentDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** ABL agent name, unique per project (`[A-Za-z][A-Za-z0-9_]*`). */
  name: string;
  /** First half of `agentPath` (`<domain>/<name>`). */
  domain: string;
  description: string | null;
  /** The working copy; saved without compilation. */
  dslContent: string;
  /** Environment → version label; filled by deployments, `{}` until then. */
  activeVersions: Record<string, string>;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const AgentSchema = new Schema<AgentDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true, maxlength: 100 },
    domain: { type: String, required: true, maxlength: 64 },
    description: { type: String, default: null, maxlength: 2000 },
    dslContent: { type: String, default: '' },
    activeVersions: { type: Schema.Types.Mixed, default: () => ({}) },
    createdBy: { type: String, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
AgentSchema.index({ tenantId: 1, projectId: 1, name: 1 }, { unique: true });
// GET /api/agents/:name looks agents up by name across the tenant's projects.
AgentSchema.index({ tenantId: 1, name: 1 });

export type AgentModel = Model<AgentDoc>;
export const agentModel = (c: Connection): AgentModel => c.model<AgentDoc>('Agent', AgentSchema, 'agents');

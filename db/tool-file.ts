// Tool library files of a project (`tools/<name>.tools.abl`): agents import them, so compiling
// an agent version reads them alongside the agent's draft. Saved without compilation.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface ToolFileDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** File stem: `billing-api` for `tools/billing-api.tools.abl`. */
  name: string;
  dslContent: string;
  updatedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const ToolFileSchema = new Schema<ToolFileDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true, maxlength: 100 },
    dslContent: { type: String, required: true },
    updatedBy: { type: String, default: null },
  },
  { timestamps: true, versionKey: false },
);
ToolFileSchema.index({ tenantId: 1, projectId: 1, name: 1 }, { unique: true });

export type ToolFileModel = Model<ToolFileDoc>;
export const toolFileModel = (c: Connection): ToolFileModel => c.model<ToolFileDoc>('ToolFile', ToolFileSchema, 'tool_files');

// Project functions: the registry a `type: lambda` tool's logical `function:` name is resolved in
// at call time. Each holds code for the code-tool sandbox (runtime, code, entrypoint, memory), so a
// function changes for every agent that calls it without a new agent version. One document per
// tenant + project + name.
import { Schema, type Connection, type Model } from 'mongoose';

export interface ProjectFunctionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description: string | null;
  runtime: 'javascript' | 'python';
  code: string;
  entrypoint: string | null;
  memoryMb: number;
  createdAt: Date;
  updatedAt: Date;
}

const ProjectFunctionSchema = new Schema<ProjectFunctionDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    runtime: { type: String, required: true, enum: ['javascript', 'python'] },
    code: { type: String, required: true },
    entrypoint: { type: String, default: null },
    memoryMb: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false },
);
ProjectFunctionSchema.index({ tenantId: 1, projectId: 1, name: 1 }, { unique: true });

export type ProjectFunctionModel = Model<ProjectFunctionDoc>;
export const projectFunctionModel = (c: Connection): ProjectFunctionModel =>
  c.model<ProjectFunctionDoc>('ProjectFunction', ProjectFunctionSchema, 'project_functions');

// Projects: a tenant's container of agents, sessions and settings. Ids are CUIDs.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface ProjectDoc {
  _id: string;
  tenantId: string;
  name: string;
  slug: string;
  description: string | null;
  /** Set when the project's deletion began (db/deletion-job.ts): from then on it is 404 to every caller. */
  deletingAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const ProjectSchema = new Schema<ProjectDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    name: { type: String, required: true, maxlength: 200 },
    slug: { type: String, required: true, maxlength: 64 },
    description: { type: String, default: null, maxlength: 2000 },
    deletingAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false },
);
ProjectSchema.index({ tenantId: 1, slug: 1 }, { unique: true });

export type ProjectModel = Model<ProjectDoc>;
export const projectModel = (c: Connection): ProjectModel => c.model<ProjectDoc>('Project', ProjectSchema, 'projects');

// Session bundles: the exact agent versions a session runs, named by a content hash of them. Written
// once when a session first loads its agents (content-addressed, so writing it again is harmless),
// read by a worker that does not hold the bundle in memory. Never updated.
import { Schema, type Connection, type Model } from 'mongoose';

export interface SessionBundleDoc {
  /** `sha256:<hex>` over tenant, project, version ids, entry agent and model overrides. */
  _id: string;
  tenantId: string;
  projectId: string;
  /** Agent version ids, ordered by agent name. */
  versionIds: string[];
  entryAgent: string | null;
  /** JSON of the deployment's model overrides, or null. */
  modelOverridesJson: string | null;
  createdAt: Date;
}

const SessionBundleSchema = new Schema<SessionBundleDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    versionIds: { type: [String], required: true },
    entryAgent: { type: String, default: null },
    modelOverridesJson: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false },
);

export type SessionBundleModel = Model<SessionBundleDoc>;
export const sessionBundleModel = (c: Connection): SessionBundleModel => c.model<SessionBundleDoc>('SessionBundle', SessionBundleSchema, 'session_bundles');

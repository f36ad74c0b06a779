// Scopes (`as-` ids): a named permission set of an app (a project). Platform keys bound to a scope
// hold what it grants; changing a scope changes every key of it (api/middleware/auth.ts).
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface ApiScopeDoc {
  _id: string;
  tenantId: string;
  /** The app: a project id. */
  projectId: string;
  name: string;
  description: string;
  /** The names set to YES (lib/api-scopes.ts); every other name is NO. */
  grants: string[];
  createdAt: Date;
  updatedAt: Date;
}

const ApiScopeSchema = new Schema<ApiScopeDoc>(
  {
    _id: { type: String, default: () => `as-${newId()}` },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true, maxlength: 200 },
    description: { type: String, default: '' },
    grants: { type: [String], default: [] },
  },
  { timestamps: true, versionKey: false },
);
// A scope name is unique within its app (key creation names the scope).
ApiScopeSchema.index({ tenantId: 1, projectId: 1, name: 1 }, { unique: true });

export type ApiScopeModel = Model<ApiScopeDoc>;
export const apiScopeModel = (c: Connection): ApiScopeModel => c.model<ApiScopeDoc>('ApiScope', ApiScopeSchema, 'api_scopes');

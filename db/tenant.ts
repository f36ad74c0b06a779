// Tenants: the unit of isolation. Every other record carries a tenantId.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface TenantDoc {
  _id: string;
  name: string;
  slug: string;
  createdAt: Date;
  updatedAt: Date;
}

const TenantSchema = new Schema<TenantDoc>(
  {
    _id: { type: String, default: newId },
    name: { type: String, required: true, maxlength: 200 },
    slug: { type: String, required: true, maxlength: 64 },
  },
  { timestamps: true, versionKey: false },
);
TenantSchema.index({ slug: 1 }, { unique: true });

export type TenantModel = Model<TenantDoc>;
export const tenantModel = (c: Connection): TenantModel => c.model<TenantDoc>('Tenant', TenantSchema, 'tenants');

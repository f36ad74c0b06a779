// Users: people who log in with email and password (scrypt hash) to obtain a JWT.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface UserDoc {
  _id: string;
  tenantId: string;
  email: string;
  name: string | null;
  passwordHash: string;
  permissions: string[];
  disabledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const UserSchema = new Schema<UserDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    email: { type: String, required: true, lowercase: true, trim: true, maxlength: 320 },
    name: { type: String, default: null, maxlength: 200 },
    passwordHash: { type: String, required: true },
    permissions: { type: [String], default: [] },
    disabledAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false },
);
// Emails are unique platform-wide so that login needs only email and password.
UserSchema.index({ email: 1 }, { unique: true });
UserSchema.index({ tenantId: 1 });

export type UserModel = Model<UserDoc>;
export const userModel = (c: Connection): UserModel => c.model<UserDoc>('User', UserSchema, 'users');

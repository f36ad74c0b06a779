// The mongoose shape of a value encrypted at rest (lib/encryption.ts), shared by every model that
// keeps one (LLM credentials, callback secrets and payloads, app-run callback tokens).
import { Schema } from 'mongoose';
import { type EncryptedValue } from '../lib/encryption';

export const EncryptedValueSchema = new Schema<EncryptedValue>(
  { alg: { type: String, required: true }, kid: { type: String }, iv: { type: String, required: true }, tag: { type: String, required: true }, data: { type: String, required: true } },
  { _id: false },
);

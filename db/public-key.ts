// Public widget keys: `pk_` + 48 hex, shown once, stored only as a SHA-256 hash like API keys
// (db/api-key.ts). A key belongs to one project, may only start chats (SDK init and config), is
// honoured only from its `allowedOrigins` and binds the chats it starts to one environment.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface PublicKeyDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  name: string;
  keyHash: string;
  /** First characters of the key (`pk_1a2b3c4d`), safe to show so people can tell keys apart. */
  keyPrefix: string;
  /** Exact origins (`https://shop.example.com`) whose pages may use the key; never empty. */
  allowedOrigins: string[];
  /** The environment the chats started through the key run in (`dev`, `staging`, `production`). */
  environment: string;
  /** Agents (ids or names) a page may start a conversation with besides the entry agent; absent in keys made before it: none. */
  allowedAgents?: string[];
  /** What the widget shows (GET /api/v1/sdk/config); each field optional, null when unset. */
  widget?: PublicKeyWidget | null;
  revokedAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const WIDGET_POSITIONS = ['bottom-right', 'bottom-left'] as const;
export type WidgetPosition = (typeof WIDGET_POSITIONS)[number];

export interface PublicKeyWidget {
  greeting: string | null;
  title: string | null;
  theme: { primaryColor: string | null; position: WidgetPosition | null; launcherLabel: string | null };
}

const PublicKeySchema = new Schema<PublicKeyDoc>(
  {
    _id: { type: String, default: () => `pkey-${newId()}` },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true, maxlength: 200 },
    keyHash: { type: String, required: true },
    keyPrefix: { type: String, required: true },
    allowedOrigins: { type: [String], default: [] },
    environment: { type: String, required: true },
    allowedAgents: { type: [String], default: [] },
    widget: {
      greeting: { type: String, default: null, maxlength: 1000 },
      title: { type: String, default: null, maxlength: 80 },
      theme: {
        primaryColor: { type: String, default: null },
        position: { type: String, default: null },
        launcherLabel: { type: String, default: null, maxlength: 40 },
      },
    },
    revokedAt: { type: Date, default: null },
    createdBy: { type: String, default: null },
  },
  { timestamps: true, versionKey: false },
);
PublicKeySchema.index({ keyHash: 1 }, { unique: true });
PublicKeySchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
// CORS preflights ask whether any live key lists an origin.
PublicKeySchema.index({ allowedOrigins: 1 });

export type PublicKeyModel = Model<PublicKeyDoc>;
export const publicKeyModel = (c: Connection): PublicKeyModel => c.model<PublicKeyDoc>('PublicKey', PublicKeySchema, 'public_keys');

// Agentic-app sessions: what the public app API adds to a core session (db/session.ts) — the
// caller's references, the `u-` user id, the source, and the run status (idle/busy/error). The
// conversation itself is the AgentSession workflow `session/<sessionId>`, as for /chat/agent.
import { Schema, type Connection, type Model } from 'mongoose';

export const APP_SESSION_SOURCES = ['AP', 'AIS-AA', 'AIS-QM', 'AIS-CC', 'AP-PG', 'AP-ES', 'AIW', 'AIP', 'MP'] as const;
export type AppSessionSource = (typeof APP_SESSION_SOURCES)[number];

export interface AppSessionDoc {
  /** The core session id (a UUID); the API shows it as `s-<id>`. */
  _id: string;
  tenantId: string;
  projectId: string;
  environment: string;
  sessionReference: string | null;
  userReference: string | null;
  /** `u-…`: stable per userReference within the app, random for an anonymous session. */
  userId: string;
  source: AppSessionSource;
  /**
   * Unique while the session is live: how find-or-create finds it (`ref:`/`user:` + a hash of the
   * reference), or `new:<id>` / `terminated:<id>` — every document holds a distinct value, so the
   * unique index needs no sparse or partial support.
   */
  liveKey: string;
  /** Runs executing now; the session is `busy` while this is above zero. */
  activeRuns: number;
  /** The last finished run failed: the session shows `error` until a run succeeds. */
  lastRunFailed: boolean;
  terminatedAt: Date | null;
  createdAt: Date;
}

const AppSessionSchema = new Schema<AppSessionDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    environment: { type: String, required: true },
    sessionReference: { type: String, default: null },
    userReference: { type: String, default: null },
    userId: { type: String, required: true },
    source: { type: String, enum: APP_SESSION_SOURCES, default: 'AP' },
    liveKey: { type: String, required: true },
    activeRuns: { type: Number, default: 0 },
    lastRunFailed: { type: Boolean, default: false },
    terminatedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false },
);
AppSessionSchema.index({ liveKey: 1 }, { unique: true });
AppSessionSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
AppSessionSchema.index({ tenantId: 1, projectId: 1, environment: 1, userReference: 1, createdAt: -1 });

export type AppSessionModel = Model<AppSessionDoc>;
export const appSessionModel = (c: Connection): AppSessionModel => c.model<AppSessionDoc>('AppSession', AppSessionSchema, 'app_sessions');

/** idle / busy / error / terminated, from what the record holds. */
export function appSessionStatus(session: Pick<AppSessionDoc, 'terminatedAt' | 'activeRuns' | 'lastRunFailed'>): 'idle' | 'busy' | 'error' | 'terminated' {
  if (session.terminatedAt) return 'terminated';
  if (session.activeRuns > 0) return 'busy';
  return session.lastRunFailed ? 'error' : 'idle';
}

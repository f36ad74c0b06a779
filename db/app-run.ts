// Runs of agentic-app sessions (POST …/runs/execute): one turn each, its status and output, and
// for an async run the callback it is delivered to (the token encrypted at rest; it signs the
// delivery and is never sent).
import { Schema, type Connection, type Model } from 'mongoose';
import { type EncryptedValue } from '../lib/encryption';
import { EncryptedValueSchema } from './encrypted-value';
import { type AppSessionModel } from './app-session';

/** Purpose of a run's callback token at rest (lib/encryption.ts). */
export const APP_RUN_CALLBACK_TOKEN_PURPOSE = 'app-run-callback-token';

export const APP_RUN_STATUSES = ['pending', 'running', 'success', 'failed'] as const;
export type AppRunStatus = (typeof APP_RUN_STATUSES)[number];

export interface AppRunDoc {
  /** `r-…` */
  _id: string;
  tenantId: string;
  projectId: string;
  /** The core session id (UUID). */
  sessionId: string;
  /** `msg-…` */
  messageId: string;
  status: AppRunStatus;
  message: string;
  /** The run's metadata as JSON text: any JSON a caller sends, which a document could not always hold. */
  metadataJson: string | null;
  output: { type: string; content: string }[];
  /** Span ids of the turn's trace events, so session detail names the trace after the run. */
  spanIds: string[];
  error: { code: string; message: string } | null;
  isAsync: boolean;
  callbackUrl: string | null;
  callbackToken: EncryptedValue | null;
  deliveryAttempts: number;
  deliveredAt: Date | null;
  createdAt: Date;
  finishedAt: Date | null;
}

const AppRunSchema = new Schema<AppRunDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    messageId: { type: String, required: true },
    status: { type: String, enum: APP_RUN_STATUSES, required: true },
    message: { type: String, required: true },
    metadataJson: { type: String, default: null },
    output: { type: Schema.Types.Mixed, default: [] },
    spanIds: { type: [String], default: [] },
    error: { type: Schema.Types.Mixed, default: null },
    isAsync: { type: Boolean, default: false },
    callbackUrl: { type: String, default: null },
    callbackToken: { type: EncryptedValueSchema, default: null },
    deliveryAttempts: { type: Number, default: 0 },
    deliveredAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
  },
  { versionKey: false, minimize: false },
);
AppRunSchema.index({ tenantId: 1, sessionId: 1, createdAt: 1 });
// The sweep of runs left pending or running by a stopped process (core/agentic-apps/stale-runs.ts), across tenants.
AppRunSchema.index({ status: 1, createdAt: 1 });

export type AppRunModel = Model<AppRunDoc>;
export const appRunModel = (c: Connection): AppRunModel => c.model<AppRunDoc>('AppRun', AppRunSchema, 'app_runs');

/** Marks a run started and its session busy (one more run in flight). */
export async function markAppRunStarted(models: { AppRun: AppRunModel; AppSession: AppSessionModel }, run: Pick<AppRunDoc, '_id' | 'tenantId' | 'sessionId'>): Promise<void> {
  const changed = await models.AppRun.updateOne({ _id: run._id, tenantId: run.tenantId, status: 'pending' }, { $set: { status: 'running' } });
  if (changed.modifiedCount === 0) return;
  await models.AppSession.updateOne({ _id: run.sessionId, tenantId: run.tenantId }, { $inc: { activeRuns: 1 } });
}

export type AppRunOutcome =
  | { ok: true; output: AppRunDoc['output']; spanIds: string[] }
  | { ok: false; error: { code: string; message: string } };

/**
 * Records a run's outcome once (a repeated call finds it finished and changes nothing) and takes
 * it off its session's runs in flight: the session is `idle` again, or `error` after a failure.
 * True for the call that recorded it.
 */
export async function finishAppRun(
  models: { AppRun: AppRunModel; AppSession: AppSessionModel },
  run: Pick<AppRunDoc, '_id' | 'tenantId' | 'sessionId'>,
  outcome: AppRunOutcome,
): Promise<boolean> {
  const set = outcome.ok
    ? { status: 'success', output: outcome.output, spanIds: outcome.spanIds, finishedAt: new Date() }
    : { status: 'failed', error: outcome.error, finishedAt: new Date() };
  const changed = await models.AppRun.updateOne({ _id: run._id, tenantId: run.tenantId, status: 'running' }, { $set: set });
  if (changed.modifiedCount === 0) return false;
  await models.AppSession.updateOne({ _id: run.sessionId, tenantId: run.tenantId }, { $inc: { activeRuns: -1 }, $set: { lastRunFailed: !outcome.ok } });
  return true;
}

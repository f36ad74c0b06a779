// How the agentic-app routes show an app session: its summary, the sessionInfo every run answer
// carries, and the upload settings (core/agentic-apps/sessions.ts finds, lists and ends sessions).
import { appSessionStatus, type AppSessionDoc } from '../../db/app-session';

export function presentAppSession(session: AppSessionDoc) {
  return {
    sessionId: `s-${session._id}`,
    sessionReference: session.sessionReference,
    userReference: session.userReference,
    status: appSessionStatus(session),
    userId: session.userId,
    createdAt: new Date(session.createdAt).toISOString(),
    source: session.source,
  };
}

export function sessionInfo(session: AppSessionDoc, runId: string | null) {
  return {
    status: appSessionStatus(session),
    userReference: session.userReference,
    sessionReference: session.sessionReference,
    userId: session.userId,
    sessionId: `s-${session._id}`,
    runId,
    appId: session.projectId,
    attachments: [] as unknown[],
  };
}

/** File uploads are not taken yet: every app answers with uploads off. */
export const FILE_UPLOAD_CONFIG = { enabled: false, isAttachmentsEnabled: false, maxFileCount: 0, maxFileSize: 0, maxTokens: 0 };

// How the agentic-app routes show an app session: its summary, the sessionInfo every run answer
// carries, and the upload settings (core/agentic-apps/sessions.ts finds, lists and ends sessions).
import { appSessionStatus, type AppSessionDoc } from '../../db/app-session';
import { type AttachmentLimits, type AttachmentView } from '../../core/attachments/store';
import { ALLOWED_EXTENSIONS } from '../../core/attachments/types';

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

/** `attachments`: the files the run carried ({ fileId, fileName, fileType }), none otherwise. */
export function sessionInfo(session: AppSessionDoc, runId: string | null, attachments: readonly AttachmentView[] = []) {
  return {
    status: appSessionStatus(session),
    userReference: session.userReference,
    sessionReference: session.sessionReference,
    userId: session.userId,
    sessionId: `s-${session._id}`,
    runId,
    appId: session.projectId,
    attachments: attachments.map((a) => ({ fileId: a.attachmentId, fileName: a.filename, fileType: a.mimeType })),
  };
}

/**
 * The create response's upload settings: on for a key holding DOCUMENT_UPLOAD (the upload route's
 * gate), with the platform's attachment limits (maxFileSize in MB, as the spec gives it).
 */
export function fileUploadConfig(config: AttachmentLimits, enabled: boolean) {
  return {
    enabled,
    isAttachmentsEnabled: enabled,
    maxFileCount: enabled ? config.ATTACHMENTS_MAX_PER_SESSION : 0,
    maxFileSize: enabled ? Math.floor((config.ATTACHMENT_MAX_BYTES / (1024 * 1024)) * 100) / 100 : 0,
    maxTokens: enabled ? config.ATTACHMENT_MAX_TOKENS_PER_SESSION : 0,
  };
}

/** The extensions of the file types a session takes; none when uploads are off. */
export const allowedMimeTypes = (enabled: boolean): string[] => (enabled ? [...ALLOWED_EXTENSIONS] : []);

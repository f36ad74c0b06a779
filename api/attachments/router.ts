// File uploads into sessions: POST /api/projects/:projectId/sessions/:id/attachments (the spec's
// attachments row) and the agentic-app form under /api/v2/apps (gated by DOCUMENT_UPLOAD). Each
// checks the caller and the session before a byte of the body is read; the file then streams
// into GridFS (core/attachments/store.ts). Messages carry them through POST /api/v1/chat/send.
import { type Request } from 'express';
import { canActInEnvironment } from '../../lib/permissions';
import { hasGrant } from '../../lib/api-scopes';
import { ApiError } from '../../lib/errors';
import { findOwned } from '../../db/owned';
import { sdkSessionScope } from '../../core/sessions/read';
import { requireEnvironment } from '../../core/platform-keys/environments';
import { coreSessionId, loadApp } from '../../core/agentic-apps/sessions';
import { deleteAttachment, requireRoomForAttachment, storeAttachment, type AttachmentOwner, type AttachmentView } from '../../core/attachments/store';
import { type AttachmentDoc } from '../../db/attachment';
import { type AppContext } from '../context';
import { defineRoute, type AnyRoute } from '../http/route';
import { readMultipartFile } from '../http/multipart';
import { RESERVED_SESSION_SUBPATHS } from '../sessions/schemas';
import { ZAppAttachmentParams, ZAppAttachmentResponse, ZAttachmentParams, ZAttachmentUploadBody, ZAttachmentUploadResponse } from './schemas';

/** Streams the request's `file` into the session's attachments, once the session has room. */
async function receiveAttachment(ctx: AppContext, req: Request, owner: AttachmentOwner, source: AttachmentDoc['metadata']['source']): Promise<AttachmentView> {
  await requireRoomForAttachment(ctx.models, owner, ctx.config);
  return readMultipartFile(
    req,
    'file',
    ctx.config.ATTACHMENT_MAX_BYTES,
    (file) => storeAttachment(ctx.models, { owner, source, filename: file.filename, declaredType: file.declaredType, content: file.content, limits: ctx.config }),
    (stored) => deleteAttachment(ctx.models, stored.attachmentId),
  );
}

const UPLOAD_DESCRIPTION =
  'multipart/form-data with one file in the field `file`. Limits (docs/sessions-api.md, "Attachments"): ATTACHMENT_MAX_BYTES per file (default 10 MB; 413 beyond), ' +
  'ATTACHMENTS_MAX_PER_SESSION files per session (default 20; 409 beyond), ATTACHMENT_MAX_TOKENS_PER_SESSION estimated tokens of text per session (default 200,000; 413 beyond). ' +
  'A type not allowed, or content that is not what its type says, is 415.';

const SDK_NOTE =
  "An embedded widget may send `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it uploads only into sessions its end user started (another end user's, another project's or environment's is 404).";

export const attachmentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/sessions/:id/attachments',
    operationId: 'uploadSessionAttachment',
    summary: 'Attach a file to a session (stored in GridFS) for a later message to carry',
    description: `${UPLOAD_DESCRIPTION} ${SDK_NOTE}`,
    tags: ['Sessions'],
    auth: 'session:execute',
    sdkToken: true,
    // `sessions/generations/…` and `sessions/export/…` are never a session's.
    reservedParams: { id: RESERVED_SESSION_SUBPATHS },
    params: ZAttachmentParams,
    body: ZAttachmentUploadBody,
    requestMedia: 'multipart/form-data',
    bodyExample: { file: 'Invoice INV-123456\nTotal: 42 EUR\n' },
    successStatus: 201,
    errorStatuses: [404, 409, 413, 415],
    response: ZAttachmentUploadResponse,
    async handler({ ctx, principal, project, params, req }) {
      const scope = { tenantId: principal.tenantId, projectId: project!._id };
      const session = await findOwned(ctx.models.Session, params.id, { ...scope, ...sdkSessionScope(principal) });
      if (!session || !canActInEnvironment(principal, session.environment)) throw ApiError.notFound('Session');
      if (session.status === 'ended') throw new ApiError('CONFLICT', 'Session has ended; it takes no more attachments');
      const stored = await receiveAttachment(ctx, req, { ...scope, sessionId: session._id }, 'api');
      return { success: true, ...stored };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v2/apps/:appId/environments/:envName/sessions/:sessionId/attachments',
    operationId: 'uploadAppSessionFile',
    summary: "File upload into an agentic-app session (the create response's fileUploadConfig); needs DOCUMENT_UPLOAD",
    description: `${UPLOAD_DESCRIPTION} The key needs the DOCUMENT_UPLOAD permission (403 otherwise). A run carries files through runs/execute \`attachments\`.`,
    tags: ['Agentic-app sessions'],
    auth: 'authenticated',
    params: ZAppAttachmentParams,
    body: ZAttachmentUploadBody,
    requestMedia: 'multipart/form-data',
    bodyExample: { file: 'Order 5521: two chairs\n' },
    successStatus: 201,
    errorStatuses: [403, 404, 409, 413, 415],
    response: ZAppAttachmentResponse,
    async handler({ ctx, principal, params, req }) {
      if (!hasGrant(principal, 'DOCUMENT_UPLOAD')) throw new ApiError('FORBIDDEN', "This credential lacks the 'DOCUMENT_UPLOAD' permission");
      const app = await loadApp(ctx, principal, params.appId);
      requireEnvironment(principal, params.envName);
      const id = coreSessionId(params.sessionId);
      const session = await ctx.models.AppSession.findOne({ _id: id, tenantId: app.tenantId, projectId: app._id, environment: params.envName }).lean();
      if (!session) throw ApiError.notFound('Session');
      if (session.terminatedAt) throw new ApiError('CONFLICT', 'Session has been terminated; it takes no more files');
      const stored = await receiveAttachment(ctx, req, { tenantId: app.tenantId, projectId: app._id, sessionId: id }, 'app');
      return { fileId: stored.attachmentId, fileName: stored.filename, fileType: stored.mimeType, sizeBytes: stored.sizeBytes, sessionId: `s-${id}` };
    },
  }),
];

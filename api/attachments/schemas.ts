// Request and response schemas of the attachment uploads (docs/sessions-api.md, "Attachments";
// docs/agentic-app-sessions.md, "File uploads"): a multipart body with one file in `file`.
import { z } from 'zod';
import '../openapi/registry';
import { ZSessionParams } from '../sessions/schemas';
import { ZAppEnvParams } from '../agentic-apps/schemas';
import { APP_SESSION_ID_PATTERN } from '../../core/agentic-apps/sessions';
import { describeAllowedTypes } from '../../core/attachments/types';

export const ZAttachmentUploadBody = z
  .object({
    file: z
      .string()
      .openapi({ type: 'string', format: 'binary' })
      .describe(`The file. Allowed: ${describeAllowedTypes()}. The type is decided from the content (signature) for binary formats; a text file needs a text type or extension and UTF-8 content`),
  })
  .strict()
  .openapi('AttachmentUpload');

export const ZAttachmentParams = ZSessionParams;

export const ZAttachmentSchema = z
  .object({
    attachmentId: z.string().describe('att_…; name it in POST /api/v1/chat/send'),
    filename: z.string().describe('The name sent, without any path, at most 255 characters'),
    mimeType: z.string().describe('The type the content was found to be'),
    sizeBytes: z.number(),
  })
  .openapi('Attachment');

export const ZAttachmentUploadResponse = ZAttachmentSchema.extend({ success: z.literal(true) }).openapi('AttachmentUploadResponse');

export const ZAppAttachmentParams = ZAppEnvParams.extend({
  sessionId: z.string().regex(APP_SESSION_ID_PATTERN, 'must be a session id (s-…)').describe('The app session (s-… or the bare id)'),
});

export const ZAppAttachmentResponse = z
  .object({
    fileId: z.string().describe('att_…; name it in runs/execute `attachments.includeFiles`'),
    fileName: z.string(),
    fileType: z.string().describe('The MIME type the content was found to be'),
    sizeBytes: z.number(),
    sessionId: z.string().describe('s-…'),
  })
  .openapi('AppAttachmentUploadResponse');

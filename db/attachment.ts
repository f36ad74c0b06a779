// Session attachments: the files collection of the GridFS bucket `attachments` (the bytes are in
// `attachments.chunks`, written and read through the driver's GridFSBucket, core/attachments/).
// This model only reads the files documents: who owns a file sits in its `metadata`, and every
// lookup carries the tenant and the session next to the id.
import { Schema, type Connection, type Model } from 'mongoose';

/** The GridFS bucket that holds attachments' bytes. */
export const ATTACHMENT_BUCKET = 'attachments';

export interface AttachmentMetadata {
  tenantId: string;
  projectId: string;
  /** The core session id (an agentic-app session's too: its `s-` id without the prefix). */
  sessionId: string;
  /** The type the content was found to be (core/attachments/types.ts), never the client's claim alone. */
  mimeType: string;
  /** Whether the agent is given the content (UTF-8 text) or only the file's name, type and size. */
  text: boolean;
  /** Estimated tokens of the content: a text file's bytes / 4, rounded up; 0 for other files. */
  tokens: number;
  /** Which surface took it: the sessions API or an agentic app. */
  source: 'api' | 'app';
}

export interface AttachmentDoc {
  _id: string;
  filename: string;
  /** Bytes (GridFS `length`). */
  length: number;
  chunkSize: number;
  uploadDate: Date;
  metadata: AttachmentMetadata;
}

const AttachmentSchema = new Schema<AttachmentDoc>(
  {
    _id: { type: String, required: true },
    filename: { type: String, required: true },
    length: { type: Number, required: true },
    chunkSize: { type: Number, required: true },
    uploadDate: { type: Date, required: true },
    metadata: {
      tenantId: { type: String, required: true },
      projectId: { type: String, required: true },
      sessionId: { type: String, required: true },
      mimeType: { type: String, required: true },
      text: { type: Boolean, required: true },
      tokens: { type: Number, required: true },
      source: { type: String, required: true },
    },
  },
  { versionKey: false },
);
// A session's attachments (the per-session limits, and the ids a message names).
AttachmentSchema.index({ 'metadata.tenantId': 1, 'metadata.sessionId': 1, uploadDate: 1 });

export type AttachmentModel = Model<AttachmentDoc>;
export const attachmentModel = (c: Connection): AttachmentModel => c.model<AttachmentDoc>('Attachment', AttachmentSchema, `${ATTACHMENT_BUCKET}.files`);

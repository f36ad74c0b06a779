// Session attachments in the GridFS bucket `attachments`: an upload streams into it (never the
// whole file in memory) while its type is decided and its size counted; a file refused half-way
// leaves nothing behind. The per-session limits are checked before the upload and again once the
// file is stored (then undone if concurrent uploads took the room), so a session never holds more.
// Messages name attachments by id; a lookup carries the tenant and the session with the id.
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { mongo } from 'mongoose';
import { ATTACHMENT_BUCKET, type AttachmentDoc } from '../../db/attachment';
import { type Models } from '../../db/models';
import { type Config } from '../../lib/config';
import { DomainError } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { decideType, describeAllowedTypes, SIGNATURE_BYTES, TextCheck, type AllowedType } from './types';

/** `att_` and a CUID. */
export const ATTACHMENT_ID_PATTERN = /^att_[a-z0-9]{20,40}$/;
/** Longest file name kept (longer ones are cut, keeping the extension). */
export const FILENAME_MAX_CHARS = 255;

export interface AttachmentOwner {
  tenantId: string;
  projectId: string;
  sessionId: string;
}

/** An attachment as the API shows it (spec "Attachment"). */
export interface AttachmentView {
  attachmentId: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
}

export type AttachmentLimits = Pick<Config, 'ATTACHMENT_MAX_BYTES' | 'ATTACHMENTS_MAX_PER_SESSION' | 'ATTACHMENT_MAX_TOKENS_PER_SESSION'>;

export const presentAttachment = (doc: AttachmentDoc): AttachmentView => ({
  attachmentId: doc._id,
  filename: doc.filename,
  mimeType: doc.metadata.mimeType,
  sizeBytes: doc.length,
});

function bucketOf(models: Models): mongo.GridFSBucket {
  return new mongo.GridFSBucket(models.connection.db!, { bucketName: ATTACHMENT_BUCKET });
}

export const tokensOf = (bytes: number, text: boolean): number => (text ? Math.ceil(bytes / 4) : 0);

const formatMb = (bytes: number) => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB` : `${bytes} bytes`);
export const fileTooLarge = (limits: AttachmentLimits) => new DomainError('PAYLOAD_TOO_LARGE', `The file exceeds the ${formatMb(limits.ATTACHMENT_MAX_BYTES)} limit`);
const typeRefused = (reason: string) => new DomainError('UNSUPPORTED_MEDIA_TYPE', `File type not allowed: ${reason}. Allowed: ${describeAllowedTypes()}`);
const tooMany = (limits: AttachmentLimits) =>
  new DomainError('CONFLICT', `The session holds ${limits.ATTACHMENTS_MAX_PER_SESSION} attachments, the most it may`);
const tooManyTokens = (limits: AttachmentLimits) =>
  new DomainError('PAYLOAD_TOO_LARGE', `The session's attachments would exceed ${limits.ATTACHMENT_MAX_TOKENS_PER_SESSION} estimated tokens together`);

const ownerFilter = (owner: Pick<AttachmentOwner, 'tenantId' | 'sessionId'>) => ({ 'metadata.tenantId': owner.tenantId, 'metadata.sessionId': owner.sessionId });

/** A session's attachments, oldest first (the limits; the agentic-app session info). */
export async function listSessionAttachments(models: Models, owner: Pick<AttachmentOwner, 'tenantId' | 'sessionId'>): Promise<AttachmentDoc[]> {
  return models.Attachment.find(ownerFilter(owner)).sort({ uploadDate: 1 }).lean<AttachmentDoc[]>();
}

/** Refuses an upload the session has no room for, before any byte is read (409). */
export async function requireRoomForAttachment(models: Models, owner: AttachmentOwner, limits: AttachmentLimits): Promise<void> {
  const held = await models.Attachment.countDocuments(ownerFilter(owner));
  if (held >= limits.ATTACHMENTS_MAX_PER_SESSION) throw tooMany(limits);
}

/** A file name safe to keep and show: no path, no control characters, at most FILENAME_MAX_CHARS. */
export function cleanFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[\\/]/).pop()!;
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  if (!clean) return 'file';
  if (clean.length <= FILENAME_MAX_CHARS) return clean;
  const dot = clean.lastIndexOf('.');
  const ext = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : '';
  return clean.slice(0, FILENAME_MAX_CHARS - ext.length) + ext;
}

/**
 * Passes a file through while deciding its type from its head, checking text as it goes and
 * counting its size: fails with 415 or 413 as soon as the content shows it.
 */
class UploadCheck extends Transform {
  private head: Buffer[] = [];
  private headBytes = 0;
  type: AllowedType | null = null;
  private text: TextCheck | null = null;
  size = 0;

  constructor(
    private readonly filename: string,
    private readonly declaredType: string | undefined,
    private readonly limits: AttachmentLimits,
    /** Called once the whole file passed, before the last bytes go on. */
    private readonly onChecked: (type: AllowedType, size: number) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limits.ATTACHMENT_MAX_BYTES) return done(fileTooLarge(this.limits));
    if (this.type) return done(this.check(chunk));
    this.head.push(chunk);
    this.headBytes += chunk.length;
    if (this.headBytes < SIGNATURE_BYTES) return done();
    done(this.decide());
  }

  override _flush(done: TransformCallback): void {
    if (!this.type) {
      const refused = this.decide();
      if (refused) return done(refused);
    }
    if (this.text && !this.text.end()) return done(typeRefused('the content is not UTF-8 text'));
    this.onChecked(this.type!, this.size);
    done();
  }

  /** Decides the type from the head gathered so far, then passes the head on. */
  private decide(): Error | null {
    const head = Buffer.concat(this.head);
    this.head = [];
    const decision = decideType(head, this.filename, this.declaredType);
    if (!decision.ok) return typeRefused(decision.reason);
    this.type = decision.type;
    if (decision.type.text) this.text = new TextCheck();
    return head.length > 0 ? this.check(head) : null;
  }

  private check(chunk: Buffer): Error | null {
    if (this.text && !this.text.push(chunk)) return typeRefused(`the content is not ${this.type!.mimeType} (UTF-8 text without NUL bytes)`);
    this.push(chunk);
    return null;
  }
}

export interface StoreAttachmentInput {
  owner: AttachmentOwner;
  source: AttachmentDoc['metadata']['source'];
  filename: string | undefined;
  declaredType: string | undefined;
  content: Readable;
  limits: AttachmentLimits;
}

/** Streams one file into the bucket; 413 past the size, 415 for a type not taken, 409/413 past the session's limits. */
export async function storeAttachment(models: Models, input: StoreAttachmentInput): Promise<AttachmentView> {
  const { owner, limits } = input;
  const filename = cleanFilename(input.filename);
  const id = `att_${newId()}`;
  const bucket = bucketOf(models);
  // The metadata goes into the files document once the last chunk is in, when the type and size
  // are known: the upload stream reads this object then.
  const metadata = { tenantId: owner.tenantId, projectId: owner.projectId, sessionId: owner.sessionId, mimeType: '', text: false, tokens: 0, source: input.source };
  const check = new UploadCheck(filename, input.declaredType, limits, (type, size) => {
    metadata.mimeType = type.mimeType;
    metadata.text = type.text;
    metadata.tokens = tokensOf(size, type.text);
  });
  const upload = bucket.openUploadStreamWithId(id as unknown as mongo.ObjectId, filename, { metadata });
  try {
    await pipeline(input.content, check, upload);
  } catch (err) {
    await deleteAttachment(models, id);
    throw err;
  }
  // Concurrent uploads may each have passed the check before: the one that finds the session
  // over a limit now takes its file back.
  const held = await listSessionAttachments(models, owner);
  const tokens = held.reduce((sum, a) => sum + (a.metadata.tokens ?? 0), 0);
  if (held.length > limits.ATTACHMENTS_MAX_PER_SESSION || tokens > limits.ATTACHMENT_MAX_TOKENS_PER_SESSION) {
    await deleteAttachment(models, id);
    throw held.length > limits.ATTACHMENTS_MAX_PER_SESSION ? tooMany(limits) : tooManyTokens(limits);
  }
  return { attachmentId: id, filename, mimeType: metadata.mimeType, sizeBytes: check.size };
}

/** Deletes every attachment of a session (with the session: core/sessions/end.ts). */
export async function deleteSessionAttachments(models: Models, owner: Pick<AttachmentOwner, 'tenantId' | 'sessionId'>): Promise<void> {
  const files = await models.Attachment.find(ownerFilter(owner), { _id: 1 }).lean<{ _id: string }[]>();
  for (const file of files) await deleteAttachment(models, file._id);
}

/** Deletes a file and its chunks (chunks of a file whose files document was never written too). */
export async function deleteAttachment(models: Models, id: string): Promise<void> {
  await bucketOf(models)
    .delete(id as unknown as mongo.ObjectId)
    .catch(() => undefined);
}

/**
 * The attachments a message names, each of this tenant's session, in the order named; 404 when
 * any is not (another session's or tenant's, or none at all).
 */
export async function findSessionAttachments(models: Models, owner: Pick<AttachmentOwner, 'tenantId' | 'sessionId'>, ids: readonly string[]): Promise<AttachmentDoc[]> {
  if (ids.length === 0) return [];
  const found = await models.Attachment.find({ _id: { $in: [...ids] }, ...ownerFilter(owner) }).lean<AttachmentDoc[]>();
  const byId = new Map(found.map((a) => [a._id, a]));
  const missing = ids.find((id) => !byId.has(id));
  if (missing !== undefined) throw new DomainError('NOT_FOUND', `Attachment not found: ${missing}`);
  return ids.map((id) => byId.get(id)!);
}

/**
 * The start of a text attachment, at most `maxChars` characters (read from at most 4 bytes a
 * character, never the whole file), and whether it was cut.
 */
export async function readAttachmentText(models: Models, doc: AttachmentDoc, maxChars: number): Promise<{ text: string; truncated: boolean }> {
  const maxBytes = Math.min(doc.length, maxChars * 4);
  if (maxBytes === 0) return { text: '', truncated: doc.length > 0 };
  const stream = bucketOf(models).openDownloadStream(doc._id as unknown as mongo.ObjectId, { end: maxBytes });
  const decoder = new TextDecoder('utf-8');
  let text = '';
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    // A character cut at the end of the range stays in the decoder, unsent.
    text += decoder.decode(chunk, { stream: true });
    if (text.length > maxChars) {
      stream.destroy();
      break;
    }
  }
  if (maxBytes === doc.length) text += decoder.decode();
  const chars = Array.from(text);
  const cut = chars.length > maxChars;
  return { text: cut ? chars.slice(0, maxChars).join('') : text, truncated: cut || maxBytes < doc.length };
}

// Reads a route's JSON request body, inside the route pipeline once the caller may send it
// (api/http/route.ts): never inflated (a Content-Encoding is refused with 415), read only up to
// the route's byte limit (a declared length over it is refused unread), checked to be UTF-8,
// and, where the route says so, to hold no more objects and arrays than it could need.
import { isUtf8 } from 'node:buffer';
import { type Request } from 'express';
import { ApiError } from '../../lib/errors';
import { keepRawBody } from './raw-body';

const MB = 1024 * 1024;

/** The standard body limit; routes that need more say so (`bodyLimit`). */
export const STANDARD_BODY_BYTES = 1 * MB;

/** The limit of an anonymous caller's body (a public route with no `authorize`); routes that need more say so. */
export const PUBLIC_BODY_BYTES = 16 * 1024;

export interface BodyLimit {
  /** Bytes as sent (no encoding is accepted, so also the bytes parsed). */
  bytes: number;
  /** Objects and arrays in the JSON, counted before it is parsed; unlimited when absent. */
  containers?: number;
}

/**
 * What a route's request body is: JSON (the API's own routes), a form (providers' webhooks, such
 * as Twilio's), or a file upload, which the route's handler streams itself (api/http/multipart.ts).
 */
export type RequestMedia = 'application/json' | 'application/x-www-form-urlencoded' | 'multipart/form-data';

/** `1048576` → `1 MB`, for messages. */
function formatBytes(bytes: number): string {
  return bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes}-byte`;
}

const tooLarge = (limit: number) => new ApiError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${formatBytes(limit)} limit`);

/** Why the body's headers alone make it unacceptable (415), or null. Only for a request with a body. */
export function mediaRefusal(req: Request, media: RequestMedia = 'application/json'): ApiError | null {
  if (media === 'application/x-www-form-urlencoded') {
    if (!req.is('application/x-www-form-urlencoded')) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/x-www-form-urlencoded');
  } else if (media === 'multipart/form-data') {
    if (!req.is('multipart/form-data')) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be multipart/form-data');
  } else if (!req.is(['application/json', 'application/*+json'])) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Compressed request bodies are not accepted: send the body without Content-Encoding');
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return new ApiError('UNSUPPORTED_MEDIA_TYPE', `Unsupported charset "${charset}"; send UTF-8`);
  return null;
}

/** The body's bytes, up to `limit`: past it, reading stops and the promise rejects with 413. */
function readBytes(req: Request, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const fail = (error: ApiError) => {
      cleanup();
      // What else arrives is not read: the response closes the connection (route.ts).
      req.pause();
      chunks.length = 0;
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) fail(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => fail(new ApiError('BAD_REQUEST', 'Request aborted by the client'));
    const onClose = () => {
      if (!req.readableEnded) fail(new ApiError('BAD_REQUEST', 'Request aborted by the client'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Whether the JSON text holds more than `max` objects and arrays (brackets inside strings do not count). */
function exceedsContainers(buf: Buffer, max: number): boolean {
  let count = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++count > max) return true;
  }
  return false;
}

/**
 * The parsed JSON body. 413 past the limit, 400 for bytes that are not UTF-8 or not JSON (an
 * object or an array); an empty body is `{}`.
 */
export async function readJsonBody(req: Request, limit: BodyLimit): Promise<unknown> {
  const buf = await readBytes(req, limit.bytes);
  if (!isUtf8(buf)) throw new ApiError('BAD_REQUEST', 'Request body is not valid UTF-8');
  keepRawBody(req, buf);
  if (buf.length === 0) return {};
  if (limit.containers !== undefined && exceedsContainers(buf, limit.containers)) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Request body holds more than ${limit.containers} JSON objects and arrays`);
  }
  const text = buf.toString('utf8');
  // As strict as the usual parsers: the document is an object or an array.
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') throw new ApiError('BAD_REQUEST', 'Malformed JSON in request body');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError('BAD_REQUEST', 'Malformed JSON in request body');
  }
}

/**
 * The parsed form body, each name to its value (a repeated name keeps its first value, as
 * providers' signature checks read it). 413 past the limit, 400 for bytes that are not UTF-8.
 */
export async function readFormBody(req: Request, limit: BodyLimit): Promise<Record<string, string>> {
  const buf = await readBytes(req, limit.bytes);
  if (!isUtf8(buf)) throw new ApiError('BAD_REQUEST', 'Request body is not valid UTF-8');
  keepRawBody(req, buf);
  const form: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(buf.toString('utf8'))) if (!Object.hasOwn(form, name)) form[name] = value;
  return form;
}

// Reads a `multipart/form-data` upload (one file in a named field) for a route whose handler
// streams it on (api/http/route.ts reads no such body itself): parsed by busboy as it arrives,
// the file handed to the consumer as a stream, never held whole. A declared length past the
// limit is refused unread (413); a second file, a missing field or a malformed body is 400, and
// what the consumer stored of a request that then fails is discarded.
import busboy from 'busboy';
import { type Readable } from 'node:stream';
import { type Request } from 'express';
import { ApiError } from '../../lib/errors';

/** Room for the multipart framing (boundaries, part headers) beyond the file itself. */
export const MULTIPART_OVERHEAD_BYTES = 16 * 1024;

export interface UploadedFile {
  filename: string | undefined;
  /** The part's Content-Type as the client sent it: a claim, checked against the content. */
  declaredType: string | undefined;
  content: Readable;
}

/**
 * Reads the request's multipart body and hands its one file, in the field `field`, to `consume`
 * (which must read the stream to its end or fail). The file's bytes beyond `maxFileBytes` are not
 * passed on: `consume` sees a stream that stops there with `truncated` set, and should count.
 */
export function readMultipartFile<T>(
  req: Request,
  field: string,
  maxFileBytes: number,
  consume: (file: UploadedFile) => Promise<T>,
  /** Undoes what `consume` did when the request fails after it (a second file, a broken end, the client gone). */
  discard: (value: T) => Promise<void>,
): Promise<T> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxFileBytes + MULTIPART_OVERHEAD_BYTES) {
    return Promise.reject(new ApiError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${maxFileBytes + MULTIPART_OVERHEAD_BYTES}-byte limit of this upload`));
  }
  return new Promise<T>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // One more byte than allowed, so the consumer sees the file is too large and says so.
        limits: { files: 1, fileSize: maxFileBytes + 1, fields: 1, fieldSize: 1024, fieldNameSize: 100, parts: 2, headerPairs: 16 },
      });
    } catch {
      reject(new ApiError('BAD_REQUEST', 'Malformed multipart/form-data request: a boundary is required'));
      return;
    }
    let settled = false;
    let consuming: Promise<T> | null = null;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      // What else arrives is not read: the response closes the connection (route.ts).
      req.unpipe(parser);
      req.pause();
      // A file still streaming ends with an error: its consumer stops and keeps nothing.
      parser.destroy();
      // The refusal is answered once what the consumer stored is gone, so a caller who reads
      // after the 4xx never finds part of a refused request.
      const undone = consuming ? consuming.then(discard, () => undefined).catch(() => undefined) : Promise.resolve();
      void undone.then(() => reject(error));
    };
    parser.on('file', (name, stream, info) => {
      if (settled || name !== field || consuming) {
        stream.resume();
        if (name !== field) fail(new ApiError('VALIDATION_ERROR', `body: unknown field; send one file, in the field \`${field}\``));
        return;
      }
      consuming = consume({ filename: info.filename, declaredType: info.mimeType, content: stream });
      consuming.catch((err: unknown) => {
        stream.resume();
        fail(err);
      });
    });
    // The body is the file alone: any other field is refused, as unknown JSON fields are.
    parser.on('field', (name) =>
      fail(new ApiError('VALIDATION_ERROR', name === field ? `body.${field}: must be a file (a part with a filename)` : `body: unknown field; send one file, in the field \`${field}\``)),
    );
    parser.on('filesLimit', () => fail(new ApiError('VALIDATION_ERROR', `body: send one file, in the field \`${field}\``)));
    parser.on('partsLimit', () => fail(new ApiError('VALIDATION_ERROR', 'body: too many parts')));
    parser.on('fieldsLimit', () => fail(new ApiError('VALIDATION_ERROR', 'body: too many fields')));
    parser.on('error', () => fail(new ApiError('BAD_REQUEST', 'Malformed multipart/form-data request')));
    parser.on('close', () => {
      if (!consuming) return fail(new ApiError('VALIDATION_ERROR', `body.${field}: is required (a file)`));
      consuming.then((value) => {
        if (settled) return;
        settled = true;
        resolve(value);
      }, fail);
    });
    req.on('close', () => {
      if (!req.complete) fail(new ApiError('BAD_REQUEST', 'Request aborted by the client'));
    });
    req.pipe(parser);
  });
}

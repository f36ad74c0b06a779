// Recordings: a session's recordings for a project-bound platform key with `recordings.read`
// (signed, short-lived media URLs), and the media behind such a URL, streamed from GridFS with
// single byte ranges. The media route takes no credential header: its token is the credential.
import { type Request, type Response } from 'express';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { permissionsHoldGrant } from '../../lib/api-scopes';
import { findVisibleProject } from '../../core/projects/visible';
import { findRecordingMedia, listSessionRecordings, type StoredMedia } from '../../core/telephony/recordings';
import { verifyMediaToken } from '../../core/telephony/recording-media-tokens';
import { recordingMediaBucket } from '../../db/recording';
import { type AppContext } from '../context';
import {
  ZRecordingMediaBody,
  ZRecordingMediaParams,
  ZRecordingMediaQuery,
  ZSessionRecordingsParams,
  ZSessionRecordingsQuery,
  ZSessionRecordingsResponse,
} from './schemas';

const TAGS = ['Recordings'];

/** The scope the list needs, and the permission name its refusal reports (behaviour notes §8). */
const RECORDINGS_SCOPE = 'recordings.read';
const RECORDINGS_PERMISSION = 'recording:read';

/** A media response must have finished within this (ms); past it the stream is cut (504 if nothing was sent yet). */
export const RECORDING_MEDIA_STREAM_LIMIT_MS = 5 * 60 * 1000;

/** Neither the list nor the media may be kept by a cache or leak through a Referer. */
const PRIVATE_HEADERS: Record<string, string> = { 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Referrer-Policy': 'no-referrer' };

function holdsScope(principal: Principal, grant: string): boolean {
  return principal.scope ? principal.scope.grants.has(grant) : permissionsHoldGrant(principal.permissions, grant);
}

/** The list's credential rules, in order: a platform key (403), bound to a project (403), with the scope (403), of this project (404). */
async function requireRecordingsReader(ctx: AppContext, principal: Principal, projectId: string) {
  if (principal.kind !== 'api_key') {
    throw new ApiError('PLATFORM_API_KEY_REQUIRED', 'The recordings list takes a platform key (abl_…) in x-api-key or as Bearer, not a user token');
  }
  if (principal.projectId === null) throw new ApiError('PLATFORM_API_KEY_REQUIRED', 'The recordings list takes a platform key bound to the project');
  if (!holdsScope(principal, RECORDINGS_SCOPE)) {
    throw new ApiError('PERMISSION_REQUIRED', {
      message: `This key lacks the '${RECORDINGS_SCOPE}' scope`,
      details: { required: RECORDINGS_PERMISSION },
      extraBody: { required: RECORDINGS_PERMISSION },
    });
  }
  const project = principal.projectId === projectId ? await findVisibleProject(ctx, principal, projectId) : null;
  if (!project) throw new ApiError('PROJECT_NOT_FOUND', 'Project not found');
  return project;
}

/** Streams a stored file (or one byte range of it) to the response, within the time limit. */
async function streamMedia(ctx: AppContext, req: Request, res: Response, media: StoredMedia, disposition: string): Promise<typeof RESPONSE_SENT> {
  const size = media.length;
  let start = 0;
  let end = size - 1;
  let status = 200;
  if (req.headers.range !== undefined) {
    const ranges = req.range(size, { combine: true });
    if (ranges === -1) {
      throw new ApiError('RANGE_NOT_SATISFIABLE', { message: `The range is outside the file's ${size} bytes`, headers: { 'Content-Range': `bytes */${size}`, ...PRIVATE_HEADERS } });
    }
    // A malformed header, another unit or several ranges: the whole file (RFC 9110 §14.2 lets a server ignore Range).
    if (ranges !== -2 && ranges !== undefined && ranges.type === 'bytes' && ranges.length === 1) {
      start = ranges[0]!.start;
      end = ranges[0]!.end;
      status = 206;
    }
  }
  const headers: Record<string, string> = {
    ...PRIVATE_HEADERS,
    'Content-Type': media.file.contentType,
    'Content-Length': String(Math.max(0, end - start + 1)),
    'Content-Disposition': `${disposition}; filename="${media.file.fileName.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
    'Accept-Ranges': 'bytes',
    'X-Content-Type-Options': 'nosniff',
    ...(status === 206 ? { 'Content-Range': `bytes ${start}-${end}/${size}` } : {}),
  };
  if (size === 0) {
    res.status(200).set(headers).end();
    return RESPONSE_SENT;
  }
  const download = recordingMediaBucket(ctx.models.connection).openDownloadStream(media.file.gridFsId, { start, end: end + 1 });
  const failure = await new Promise<ApiError | null>((resolve) => {
    let settled = false;
    const settle = (error: ApiError | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(error);
    };
    const fail = (error: ApiError) => {
      download.unpipe(res);
      download.destroy();
      // Once bytes are out the status cannot change: the connection is cut, so the client sees a short body.
      if (res.headersSent) res.destroy();
      settle(error);
    };
    const timer = setTimeout(() => fail(new ApiError('GATEWAY_TIMEOUT', 'The media could not be sent within five minutes')), RECORDING_MEDIA_STREAM_LIMIT_MS);
    download.once('error', () => fail(new ApiError('RECORDING_MEDIA_NOT_FOUND', 'The stored recording file could not be read')));
    res.once('finish', () => settle(null));
    res.once('close', () => {
      download.destroy();
      settle(null);
    });
    res.status(status).set(headers);
    download.pipe(res);
  });
  if (failure && !res.headersSent) {
    for (const name of Object.keys(headers)) if (!(name in PRIVATE_HEADERS)) res.removeHeader(name);
    throw failure;
  }
  return RESPONSE_SENT;
}

export const recordingRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/public/recordings/projects/:projectId/sessions/:sessionId/recordings',
    operationId: 'listSessionRecordings',
    summary: "A session's call recordings, with short-lived media URLs",
    description:
      'Needs a platform key bound to the project with the `recordings.read` scope, in `x-api-key` or as `Authorization: Bearer`. ' +
      'A user token gets 403 `PLATFORM_API_KEY_REQUIRED`, a key without the scope 403 `PERMISSION_REQUIRED` (`required: "recording:read"`). ' +
      'Each stored file has a `proxied` URL (relative: prefix the API host) carrying a signed media token bound to the key, valid `expiresIn` seconds. ' +
      '`status` is `partial` (still 200) when some recordings cannot be downloaded yet or at all. At most 64 recordings and 32 files per recording (413 beyond).',
    tags: TAGS,
    auth: 'authenticated',
    projectLookup: 'handler',
    params: ZSessionRecordingsParams,
    query: ZSessionRecordingsQuery,
    errorStatuses: [400, 403, 404, 413],
    responseHeaders: PRIVATE_HEADERS,
    response: ZSessionRecordingsResponse,
    async handler({ ctx, principal, params, query, res }) {
      res.set(PRIVATE_HEADERS);
      const project = await requireRecordingsReader(ctx, principal, params.projectId);
      const { view, urlsIssued } = await listSessionRecordings(ctx, {
        tenantId: project.tenantId,
        projectId: project._id,
        sessionId: params.sessionId,
        disposition: query.disposition,
        keyId: principal.subjectId,
        environments: principal.environments ?? null,
      });
      if (urlsIssued > 0) {
        // No audit trail exists for this yet: the event is a log line, with ids and never a token.
        ctx.logger.info(
          { event: 'recording:public_media_urls_issued', tenantId: project.tenantId, projectId: project._id, sessionId: params.sessionId, keyId: principal.subjectId, urls: urlsIssued },
          'recording media URLs issued',
        );
      }
      return { success: true, data: view };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/recordings/:recordingId/media/content/:mediaToken',
    operationId: 'getRecordingMedia',
    summary: "A recording file's media, by the signed URL the recordings list issued",
    description:
      'Send no `x-api-key` or `Authorization`: the token in the path is the credential (such headers are ignored). Use the URL as listed; ' +
      '`objectIndex` and `disposition` must match the token (400). One byte range (`Range: bytes=0-65535`, `bytes=100-`, `bytes=-500`) answers 206; ' +
      'a range outside the file 416 with `Content-Range: bytes */<size>`; several ranges or a malformed header are ignored (the whole file, 200). ' +
      'A response not finished within five minutes is cut (504 when nothing was sent yet).',
    tags: TAGS,
    auth: 'public',
    projectLookup: 'handler',
    params: ZRecordingMediaParams,
    query: ZRecordingMediaQuery,
    successStatus: 200,
    alsoSuccess: [206],
    responseContentType: 'audio/wav',
    responseHeaders: { ...PRIVATE_HEADERS, 'Accept-Ranges': 'bytes' },
    errorStatuses: [400, 401, 404, 409, 416, 504],
    response: ZRecordingMediaBody,
    async handler({ ctx, params, query, req, res }) {
      res.set(PRIVATE_HEADERS);
      const claims = await verifyMediaToken(ctx.config, params.mediaToken);
      if (claims.projectId !== params.projectId || claims.recordingId !== params.recordingId) {
        throw new ApiError('INVALID_RECORDING_MEDIA_TOKEN', 'The media token is invalid, expired or does not match this URL; list the recordings again for a fresh URL');
      }
      if (query.objectIndex !== claims.objectIndex) throw new ApiError('VALIDATION_ERROR', 'query.objectIndex: does not match the media token');
      if (query.disposition !== claims.disposition) throw new ApiError('VALIDATION_ERROR', 'query.disposition: does not match the media token');
      const media = await findRecordingMedia(ctx, claims, params);
      return streamMedia(ctx, req, res, media, claims.disposition);
    },
  }),
];

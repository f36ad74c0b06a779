// Twilio's recording-status webhook: signed by the connection's auth token (403 otherwise, and
// nothing changes), it records the recording against the connection's own tenant and the session
// named in the URL we gave Twilio, and for a completed recording starts the fetch into GridFS.
import { defineRoute, type AnyRoute } from '../http/route';
import { verifyTwilioWebhook } from '../../core/telephony/connections';
import { parseRecordingStatusForm, recordRecordingStatus, startRecordingFetch } from '../../core/telephony/recordings';
import { ZRecordingStatusForm, ZRecordingStatusParams, ZRecordingStatusQuery, ZRecordingStatusResponse } from '../recordings/schemas';

export const recordingStatusRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/recording-status',
    operationId: 'twilioRecordingStatus',
    summary: "Twilio's recording-status callback (signed with X-Twilio-Signature)",
    description:
      'Called by Twilio, not by clients. The URL carries `sessionId` (or `outboundCallId`), and Twilio signs it with the rest of the form, so neither can be changed. ' +
      "`RecordingUrl` must be the recording's URL on Twilio's API host (400 otherwise, nothing recorded). A `completed` recording is then copied into the recording store.",
    tags: ['Telephony webhooks'],
    auth: 'public',
    requestMedia: 'application/x-www-form-urlencoded',
    params: ZRecordingStatusParams,
    query: ZRecordingStatusQuery,
    body: ZRecordingStatusForm,
    // An empty form is the signature check's to refuse (403), like any other unsigned one.
    bodyOptional: true,
    errorStatuses: [400, 403, 404, 409, 503],
    response: ZRecordingStatusResponse,
    bodyExample: {
      AccountSid: 'AC0123456789abcdef0123456789abcdef',
      CallSid: 'CA0123456789abcdef0123456789abcdef',
      RecordingSid: 'RE0123456789abcdef0123456789abcdef',
      RecordingUrl: 'https://api.twilio.com/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Recordings/RE0123456789abcdef0123456789abcdef',
      RecordingStatus: 'completed',
      RecordingDuration: '42',
      RecordingChannels: '2',
      RecordingSource: 'OutboundAPI',
      RecordingStartTime: 'Sun, 06 Dec 2026 10:00:00 +0000',
    },
    async handler({ ctx, params, query, body, req }) {
      const connection = await verifyTwilioWebhook(ctx, params.channelConnectionId, { path: req.originalUrl, params: body, signature: req.header('x-twilio-signature') });
      const report = parseRecordingStatusForm(body);
      const recording = await recordRecordingStatus(ctx, connection, query, report);
      // A repeated `completed` starts nothing new: the fetch's workflow id is the recording's.
      if (recording.providerStatus === 'completed' && recording.availability === 'media_in_progress') await startRecordingFetch(ctx, recording);
      return { success: true, data: { recordingId: recording._id, availability: recording.availability } };
    },
  }),
];

// Twilio's status callback of an outbound call: POST /api/telephony/twilio/:channelConnectionId/status?outboundCallId=…
// (the URL the call was placed with). The signature is checked under the connection's auth token
// first (403, nothing changed, when it does not hold); the callback then goes to the call's
// workflow as a signal, and Twilio gets its 204 at once.
import { DomainError } from '../../lib/errors';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { verifyTwilioWebhook } from '../../core/telephony/connections';
import { ingestProviderStatus, providerTimestamp } from '../../core/telephony/outbound-calls';
import { ZNoContent, ZStatusForm, ZStatusParams, ZStatusQuery } from '../outbound-calls/schemas';

export const telephonyStatusRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/status',
    operationId: 'twilioOutboundCallStatus',
    summary: "Twilio's status callback of an outbound call (signed with X-Twilio-Signature)",
    description: '204 once handed to the call. 403 for a missing or wrong signature, or a connection that does not exist (nothing changes); 404 `CHANNEL_NOT_FOUND` for a signed callback naming a call that is not the connection\'s; a late callback for a call that is over is 204 and changes nothing.',
    tags: ['Telephony webhooks'],
    auth: 'public',
    params: ZStatusParams,
    query: ZStatusQuery,
    body: ZStatusForm,
    requestMedia: 'application/x-www-form-urlencoded',
    // An empty form is judged by its signature like any other (403).
    bodyOptional: true,
    bodyExample: { CallSid: 'CA0123456789abcdef0123456789abcdef', AccountSid: 'AC0123456789abcdef0123456789abcdef', CallStatus: 'ringing', SequenceNumber: '1', Timestamp: 'Sun, 06 Dec 2026 10:00:00 +0000' },
    successStatus: 204,
    response: ZNoContent,
    errorStatuses: [400, 403, 404, 503],
    async handler({ ctx, params, query, body, req, res }) {
      const connection = await verifyTwilioWebhook(ctx, params.channelConnectionId, { path: req.originalUrl, params: body, signature: req.header('x-twilio-signature') });
      const sequence = body.SequenceNumber !== undefined && /^[0-9]{1,9}$/.test(body.SequenceNumber) ? Number(body.SequenceNumber) : null;
      const taken = await ingestProviderStatus(ctx, connection, { outboundCallId: query.outboundCallId, ref: query.ref }, {
        callSid: body.CallSid ? body.CallSid.slice(0, 64) : null,
        callStatus: String(body.CallStatus ?? '').slice(0, 32),
        answeredBy: body.AnsweredBy ? body.AnsweredBy.slice(0, 32) : null,
        sipResponseCode: body.SipResponseCode ? body.SipResponseCode.slice(0, 8) : null,
        sequenceNumber: sequence,
        timestamp: providerTimestamp(body.Timestamp),
        ingestedAt: new Date().toISOString(),
      });
      // Signed by the connection, for a call that is not its own: said plainly, nothing done.
      if (taken === 'not_found') throw new DomainError('CHANNEL_NOT_FOUND', 'No running outbound call of this connection has this id');
      res.status(204).end();
      return RESPONSE_SENT;
    },
  }),
];

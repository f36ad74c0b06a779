// Twilio's voice webhooks for a channel connection: `voice` (a call was answered: inbound to the
// connection's number, or an outbound call with `outboundCallId`), `gather` (what the caller said,
// or a poll for a reply still being worked on), `stream-ended` (a realtime call's Media Stream
// ended: the call ends, or its stream is connected again) and `voice-status` (the call's status;
// its end ends the session). No credential: each checks X-Twilio-Signature under the connection's auth token
// before anything else (403 otherwise, nothing started). They answer TwiML. docs/telephony/voice.md.
import { z } from 'zod';
import { type Response } from 'express';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { verifyTwilioWebhook } from '../../core/telephony/connections';
import { answerCall, answerGather, answerStreamEnded, callStatusChanged, type GatherState } from '../../core/telephony/voice';
import { emptyTwiml } from '../../core/telephony/voice-twiml';
import { AMD_MODES } from '../../db/channel-connection';

const ZConnectionParams = z.object({
  channelConnectionId: z.string().min(1).max(64).describe('The channel connection the number belongs to (`cc_…`)'),
});

const ZTwilioForm = z.record(z.string(), z.string()).describe('The form Twilio posts (CallSid, AccountSid, From, To, CallStatus, SpeechResult …)');
const ZTwiml = z
  .string()
  .describe('TwiML (<Response>…</Response>)')
  .openapi({
    example:
      '<?xml version="1.0" encoding="UTF-8"?><Response><Gather input="dtmf speech" action="https://switchboard.example.com/api/telephony/twilio/cc_1/gather?sessionId=…&amp;turn=1" method="POST" timeout="5" speechTimeout="auto" bargeIn="true"><Say>Hello, how can I help?</Say></Gather><Redirect method="POST">…</Redirect></Response>',
  });

/** What Twilio posts when a call is answered (the documentation's example). */
const CALL_FORM_EXAMPLE = {
  CallSid: 'CA0123456789abcdef0123456789abcdef',
  AccountSid: 'AC0123456789abcdef0123456789abcdef',
  From: '+15557654321',
  To: '+15550001000',
  CallStatus: 'in-progress',
  Direction: 'inbound',
  ApiVersion: '2010-04-01',
};

const ZVoiceQuery = z.object({
  outboundCallId: z.string().min(1).max(64).optional().describe('Set on the URL an outbound call was placed with; absent for inbound calls'),
  amd: z.enum(AMD_MODES).optional().describe('The outbound call\'s answering-machine mode: `disconnect` hangs up on a machine'),
});

/** A non-negative integer in the query: digits only, documented as an integer with its bounds. */
const queryInteger = (max: number) =>
  z
    .union([z.number(), z.string().regex(/^[0-9]{1,16}$/, 'must be an integer').transform(Number)])
    .pipe(z.number().int().min(0).max(max))
    .openapi({ type: 'integer', minimum: 0, maximum: max });
const int = (max: number) => queryInteger(max).optional();
const ZGatherQuery = z.object({
  sessionId: z.string().uuid().describe('The call\'s session'),
  turn: queryInteger(100_000).describe('The turn the next utterance is'),
  at: int(Number.MAX_SAFE_INTEGER),
  said: int(86_400_000),
  silence: int(10),
  ni: int(1),
  poll: int(1000),
  rx: int(Number.MAX_SAFE_INTEGER),
  sc: int(100_000),
  cf: int(1000),
  dt: int(1),
  vc: z.string().max(2000).optional(),
});

const ZStreamEndedQuery = z.object({
  sessionId: z.string().uuid().describe('The call\'s session'),
  reconnects: queryInteger(1000).describe('How many times the call\'s stream has been connected again so far'),
});

/** Webhook requests are signed over the URL as received: checked first, against the connection's token. */
function verify(ctx: Parameters<typeof verifyTwilioWebhook>[0], channelConnectionId: string, req: { originalUrl: string; header(name: string): string | undefined }, form: Record<string, string>) {
  return verifyTwilioWebhook(ctx, channelConnectionId, { path: req.originalUrl, params: form, signature: req.header('x-twilio-signature') });
}

function sendTwiml(res: Response, twiml: string): typeof RESPONSE_SENT {
  res.status(200).type('text/xml').send(twiml);
  return RESPONSE_SENT;
}

const TAGS = ['Telephony webhooks'];

export const voiceWebhookRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/voice',
    operationId: 'twilioVoiceWebhook',
    summary: 'A call was answered: start its agent session and say the greeting (Twilio webhook)',
    description:
      'Twilio asks it when a call to the connection\'s number, or an outbound call placed with this URL, is answered. Signed with ' +
      'X-Twilio-Signature under the connection\'s auth token (403 otherwise; nothing is started). Starts one session (channel `voice`) ' +
      'per CallSid and answers TwiML: the greeting in <Say>, then <Gather input="dtmf speech">. With `amd=disconnect` a machine is hung up on. ' +
      'A connection with `voiceMode: realtime` answers <Connect><Stream> instead: the call\'s audio goes to the phone bridge and its voice room ' +
      '(made once per CallSid), where the voice agent greets and talks with the caller; a <Redirect> to `stream-ended` follows it, for when the stream ends.',
    tags: TAGS,
    auth: 'public',
    params: ZConnectionParams,
    query: ZVoiceQuery,
    body: ZTwilioForm,
    // An empty form is refused like any unsigned one (403), not as a missing body.
    bodyOptional: true,
    requestMedia: 'application/x-www-form-urlencoded',
    bodyExample: CALL_FORM_EXAMPLE,
    responseContentType: 'text/xml',
    response: ZTwiml,
    errorStatuses: [400, 403, 404, 503],
    async handler({ ctx, params, query, body, req, res }) {
      const conn = await verify(ctx, params.channelConnectionId, req, body);
      return sendTwiml(res, await answerCall(ctx, conn, body, { outboundCallId: query.outboundCallId, amd: query.amd }));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/gather',
    operationId: 'twilioGatherWebhook',
    summary: 'What the caller said: the session\'s next turn (Twilio webhook)',
    description:
      'The <Gather action> and <Redirect> of this service\'s own TwiML: `SpeechResult` (else the keys in `Digits`) is the session\'s next turn, answered with the ' +
      'agent\'s reply and the next <Gather>; no speech is reprompted once, then the call ends; `poll` waits again for a reply still ' +
      'being worked on. Signed like every Twilio webhook (403 otherwise); the session must be the call\'s own (403).',
    tags: TAGS,
    auth: 'public',
    params: ZConnectionParams,
    query: ZGatherQuery,
    body: ZTwilioForm,
    // An empty form is refused like any unsigned one (403), not as a missing body.
    bodyOptional: true,
    requestMedia: 'application/x-www-form-urlencoded',
    bodyExample: { ...CALL_FORM_EXAMPLE, SpeechResult: 'A large pizza, please', Confidence: '0.92' },
    responseContentType: 'text/xml',
    response: ZTwiml,
    errorStatuses: [400, 403, 404, 503],
    async handler({ ctx, params, query, body, req, res }) {
      const conn = await verify(ctx, params.channelConnectionId, req, body);
      return sendTwiml(res, await answerGather(ctx, conn, body, query as GatherState));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/stream-ended',
    operationId: 'twilioStreamEndedWebhook',
    summary: 'A realtime call\'s Media Stream ended: end the call, or connect its stream again (Twilio webhook)',
    description:
      'The <Redirect> after the <Connect><Stream> of a `voiceMode: realtime` call, which Twilio follows when the stream ends. A stream that ended with the ' +
      'call\'s room or session (the voice agent said goodbye, the session ended) is answered <Hangup/>. A stream that dropped while the room is open (the ' +
      'voice agent process carrying it died or stopped) is answered <Connect><Stream> to the phone bridge again, after a pause from the second time on, ' +
      'with this URL after it and `reconnects` one more; past VOICE_STREAM_MAX_RECONNECTS the caller hears an apology, the call is hung up and its ' +
      'session ends. Signed like every Twilio webhook (403 otherwise); the session must be the call\'s own (403).',
    tags: TAGS,
    auth: 'public',
    params: ZConnectionParams,
    query: ZStreamEndedQuery,
    body: ZTwilioForm,
    // An empty form is refused like any unsigned one (403), not as a missing body.
    bodyOptional: true,
    requestMedia: 'application/x-www-form-urlencoded',
    bodyExample: CALL_FORM_EXAMPLE,
    responseContentType: 'text/xml',
    response: ZTwiml,
    errorStatuses: [400, 403, 404, 503],
    async handler({ ctx, params, query, body, req, res }) {
      const conn = await verify(ctx, params.channelConnectionId, req, body);
      return sendTwiml(res, await answerStreamEnded(ctx, conn, body, query));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/telephony/twilio/:channelConnectionId/voice-status',
    operationId: 'twilioVoiceStatusWebhook',
    summary: 'A call\'s status changed: its end ends the session (Twilio webhook)',
    description:
      'The number\'s status callback (inbound calls; outbound calls may use it too). On a terminal `CallStatus` (completed, busy, ' +
      'no-answer, failed, canceled) the call\'s session ends and its voice metrics are closed. Signed (403 otherwise). Answers empty TwiML.',
    tags: TAGS,
    auth: 'public',
    params: ZConnectionParams,
    body: ZTwilioForm,
    // An empty form is refused like any unsigned one (403), not as a missing body.
    bodyOptional: true,
    requestMedia: 'application/x-www-form-urlencoded',
    bodyExample: { ...CALL_FORM_EXAMPLE, CallStatus: 'completed', CallDuration: '42' },
    responseContentType: 'text/xml',
    response: ZTwiml,
    errorStatuses: [400, 403, 404, 503],
    async handler({ ctx, params, body, req, res }) {
      const conn = await verify(ctx, params.channelConnectionId, req, body);
      await callStatusChanged(ctx, conn, body);
      return sendTwiml(res, emptyTwiml());
    },
  }),
];

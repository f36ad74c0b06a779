// A phone call as an agent session (channel `voice`), over TwiML: the answered call starts the
// session through the one session start (core/sessions/start.ts) and says its greeting; each
// utterance Twilio gathers is a `turn` update of that session, as a chat message is; a turn still
// running when Twilio's webhook time runs short is answered with a pause and a <Redirect> that
// waits for it again; the agent ending the session, or escalating with a transfer number set,
// ends or transfers the call; the call's end ends the session. A `realtime` connection's call is
// connected to the phone bridge instead (<Connect><Stream>), and connected again, a bounded number
// of times, when its stream drops while its room is open. docs/telephony/voice.md.
import { createHash } from 'node:crypto';
import { WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateStage, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { DomainError, isDomainError } from '../../lib/errors';
import { maskPhoneNumber } from '../../lib/phone';
import {
  outboundCallSessionSignal,
  outboundCallWorkflowId,
  turnUpdate,
  type TurnResult,
  type TurnUpdateInput,
  type VoiceConfig,
} from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { endSessionWorkflow } from '../sessions/end';
import { forgetRunningSession } from '../sessions/running-sessions';
import { startSession } from '../sessions/start';
import { voiceCaller } from '../contacts/linking';
import { callerNumberIndexOf } from './caller-number';
import { resolveNewSessionTarget } from '../sessions/target';
import {
  isWorkflowNotFound,
  sendUpdateResendingDropped,
  sessionWorkflowId,
  TEMPORAL_CALL_TIMEOUT_MS,
  temporalClient,
  withDeadline,
} from '../sessions/workflow-client';
import { estimateSpeechMs, recordCallEnded, recordVoiceEvent, turnMetrics, type CallRef, type TurnInput } from './voice-metrics';
import { connectStream, hangUp, holdAndRedirect, sayAndDial, sayAndGather, sayAndHangUp, type Speech, VOICE_DEFAULTS, VOICE_TEXTS } from './voice-twiml';
import { liveKitConfigured } from '../../lib/config';
import { openPhoneRoom, phoneRoomOpen, phoneStreamUrl } from '../voice/phone-rooms';
import { signalVoiceRoomEnd } from '../voice/room-signal';

/** A Twilio webhook's form: CallSid, From, To, SpeechResult, CallStatus … */
export type TwilioForm = Record<string, string>;

/** Call statuses after which the call is over. */
export const TERMINAL_CALL_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

/** Silences in a row that end the call: the first is reprompted, the second says goodbye. */
export const NO_INPUT_LIMIT = 2;

/**
 * The session of a call: a UUID derived from the connection and the CallSid, so a webhook Twilio
 * sends again for the same call finds the same session and never starts a second one.
 */
export function voiceSessionId(connectionId: string, callSid: string): string {
  const h = createHash('sha256').update(`voice:${connectionId}:${callSid}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Where the caller's next utterance goes, carried in the <Gather action> and <Redirect> URLs.
 * Twilio signs the full URL, so these values come back as they were written.
 */
export interface GatherState {
  sessionId: string;
  /** The turn the next utterance is (0: the greeting, polled). */
  turn: number;
  /** When the answer that asked was sent (ms since the epoch). */
  at?: number;
  /** Its estimated speaking time (ms). */
  said?: number;
  /** Silences so far in this turn. */
  silence?: number;
  /** Set on the <Redirect> a <Gather> falls through to when it heard nothing. */
  ni?: number;
  /** Set when polling for the reply of `turn`: the how-many-th wait. */
  poll?: number;
  /** When that turn's utterance arrived, and its length (for its metrics). */
  rx?: number;
  sc?: number;
  /** And its speech-recognition confidence in thousandths, or 1 in `dt` when it was keyed (DTMF). */
  cf?: number;
  dt?: number;
  /** The voice settings in force (base64url JSON), for what the platform itself says. */
  vc?: string;
}

function webhookUrl(ctx: CoreContext, connectionId: string, route: string, query: object): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `${ctx.config.PUBLIC_BASE_URL.replace(/\/+$/, '')}/api/telephony/twilio/${encodeURIComponent(connectionId)}/${route}${qs ? `?${qs}` : ''}`;
}

const encodeConfig = (config: VoiceConfig): string | undefined => (Object.keys(config).length ? Buffer.from(JSON.stringify(config)).toString('base64url') : undefined);

function decodeConfig(vc: string | undefined): VoiceConfig {
  if (!vc) return {};
  try {
    const parsed: unknown = JSON.parse(Buffer.from(vc, 'base64url').toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as VoiceConfig) : {};
  } catch {
    return {};
  }
}

interface Call {
  ctx: CoreContext;
  conn: ChannelConnectionDoc;
  ref: CallRef;
}

const callOf = (ctx: CoreContext, conn: ChannelConnectionDoc, callSid: string, sessionId: string | null): Call => ({
  ctx,
  conn,
  ref: { tenantId: conn.tenantId, projectId: conn.projectId, connectionId: conn._id, callSid, sessionId, environment: conn.environment },
});

/** The answer that says `text` and gathers the next utterance as turn `turn`. */
function gatherNext(call: Call, config: VoiceConfig, text: string, turn: number, silence = 0, recording?: string, speech: Speech = text): string {
  const state: GatherState = {
    sessionId: call.ref.sessionId!,
    turn,
    at: Date.now(),
    said: estimateSpeechMs(text),
    ...(silence ? { silence } : {}),
    vc: encodeConfig(config),
  };
  const action = webhookUrl(call.ctx, call.conn._id, 'gather', state);
  const onSilence = webhookUrl(call.ctx, call.conn._id, 'gather', { ...state, ni: 1 });
  return sayAndGather(config, speech, action, onSilence, recording);
}

/**
 * A turn's reply as the call says it: with the voice forms its steps gave it (VOICE ssml /
 * plain_text), else its text. An SSML that cannot be said is logged (why, never its words).
 */
function speechOf(call: Call, result: TurnResult): Speech {
  if (!result.voiceOutput) return result.response;
  return {
    segments: result.voiceOutput,
    onFallback: (reason) => call.ctx.logger.warn({ sessionId: call.ref.sessionId, connectionId: call.conn._id, reason }, 'a reply\'s SSML was not said: its plain text was'),
  };
}

/**
 * What a turn's result is answered with: a transfer (<Dial>) for an escalation when the
 * connection has a transfer number, a goodbye (<Hangup>) when the agent ended the session, else
 * its reply and the next <Gather>. An escalation without a transfer number stays in the session
 * as on any channel: its notice is said and the call goes on.
 */
async function answerWith(call: Call, result: TurnResult, nextTurn: number, recording?: string): Promise<string> {
  const config = result.voiceConfig ?? {};
  if (result.action.type === 'escalate' && call.conn.transferNumber) {
    await recordVoiceEvent(call.ctx, call.ref, 'voice.transfer', 0, { turn: nextTurn - 1, to: maskPhoneNumber(call.conn.transferNumber) });
    return sayAndDial(config, result.response ? speechOf(call, result) : VOICE_TEXTS.transfer, call.conn.transferNumber, recording);
  }
  if (result.action.type === 'complete' || result.state.status === 'completed' || result.state.status === 'ended') {
    await recordVoiceEvent(call.ctx, call.ref, 'voice.agent_ended', 0, { turn: nextTurn - 1 });
    return sayAndHangUp(config, speechOf(call, result), recording);
  }
  return gatherNext(call, config, result.response, nextTurn, 0, recording, speechOf(call, result));
}

/** The session's update id for turn `turn` of the call: the same on every retry and poll. */
const turnUpdateId = (sessionId: string, turn: number) => `voice-${sessionId}-${turn}`;

/**
 * Sends turn `turn` (or, with `input` null, looks for the one sent before) and waits up to
 * VOICE_REPLY_WAIT_MS for its result; 'pending' when it is still running then.
 */
async function awaitTurn(ctx: CoreContext, sessionId: string, turn: number, input: TurnUpdateInput | null): Promise<TurnResult | 'pending'> {
  const client: Client = await temporalClient(ctx);
  const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
  const updateId = turnUpdateId(sessionId, turn);
  const waitUntil = Date.now() + ctx.config.VOICE_REPLY_WAIT_MS;
  // Sending is bounded on its own: a turn the session has accepted is never lost to the wait below.
  const update = input
    ? await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
        sendUpdateResendingDropped(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () => handle.startUpdate(turnUpdate, { args: [input], updateId, waitForStage: WorkflowUpdateStage.ACCEPTED })),
      )
    : handle.getUpdateHandle<TurnResult>(updateId);
  const deadline = Math.max(waitUntil, Date.now() + 1);
  try {
    return await client.withDeadline(deadline, () => update.result());
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || (err as Error)?.name === 'WorkflowUpdateRPCTimeoutOrCancelledError' || Date.now() >= deadline) return 'pending';
    throw err;
  }
}

/** The turn was refused because the session has ended (its workflow is closed or says so). */
function sessionOver(err: unknown): boolean {
  if (isWorkflowNotFound(err)) return true;
  if (err instanceof WorkflowUpdateFailedError || (err as Error)?.name === 'WorkflowUpdateFailedError') {
    for (let c: unknown = (err as { cause?: unknown }).cause; c; c = (c as { cause?: unknown }).cause) {
      const type = (c as { type?: unknown }).type;
      if (type === 'CONFLICT' || type === 'AcceptedUpdateCompletedWorkflow') return true;
    }
  }
  return false;
}

/**
 * Runs (or polls) a turn and answers with its result, a hold while it runs, or an apology when it
 * failed. `startedAt` is when its utterance arrived.
 */
async function turnAnswer(
  call: Call,
  state: GatherState,
  input: TurnUpdateInput | null,
  speech: { text: string; confidence: number | null; startedAt: number; input: TurnInput },
  recording?: string,
): Promise<string> {
  const { ctx } = call;
  const sessionId = state.sessionId;
  const poll = input ? 0 : (state.poll ?? 1);
  let result: TurnResult | 'pending';
  try {
    result = await awaitTurn(ctx, sessionId, state.turn, input);
  } catch (err) {
    if (sessionOver(err)) return sayAndHangUp(decodeConfig(state.vc), VOICE_TEXTS.unavailable);
    ctx.logger.error({ err, sessionId, turn: state.turn }, 'a voice turn failed');
    await recordVoiceEvent(ctx, call.ref, 'voice.error', state.turn, { turn: state.turn, reason: 'turn_failed' });
    return sayAndHangUp(decodeConfig(state.vc), VOICE_TEXTS.failure);
  }
  if (result === 'pending') {
    if (poll >= ctx.config.VOICE_REPLY_MAX_POLLS) {
      // The turn goes on in the session; the caller may speak again (that turn waits behind it).
      return gatherNext(call, decodeConfig(state.vc), VOICE_TEXTS.tooSlow, state.turn + 1);
    }
    const next: GatherState = {
      ...state,
      poll: poll + 1,
      rx: speech.startedAt,
      sc: speech.text.length,
      ...(speech.confidence !== null ? { cf: Math.round(speech.confidence * 1000) } : {}),
      ...(speech.input === 'dtmf' ? { dt: 1 } : {}),
    };
    delete next.ni;
    return holdAndRedirect(webhookUrl(ctx, call.conn._id, 'gather', next), recording);
  }
  const bargeIn = decodeConfig(state.vc).bargeIn ?? VOICE_DEFAULTS.bargeIn;
  await recordVoiceEvent(
    ctx,
    call.ref,
    'voice.turn',
    state.turn,
    turnMetrics(
      { promptedAt: state.at ?? null, promptSpeechMs: state.said ?? 0, bargeIn, heardAt: speech.startedAt, repliedAt: Date.now(), polls: poll },
      speech.text,
      speech.confidence,
      result.response,
      speech.input,
    ),
  );
  return answerWith(call, result, state.turn + 1, recording);
}

/** The deployment a connection pins by its `endpointSlug`, or undefined when it pins none. */
async function pinnedDeploymentId(ctx: CoreContext, conn: ChannelConnectionDoc): Promise<string | undefined> {
  if (!conn.endpointSlug) return undefined;
  const deployment = await ctx.models.Deployment.findOne({ tenantId: conn.tenantId, projectId: conn.projectId, endpointSlug: conn.endpointSlug }, { _id: 1 }).lean();
  if (!deployment) throw new DomainError('NOT_FOUND', `No deployment has the endpoint slug ${conn.endpointSlug}`);
  return deployment._id;
}

/** Tells the outbound call's workflow which session its answered call became; a missing workflow is fine. */
async function tellOutboundCall(ctx: CoreContext, outboundCallId: string, sessionId: string): Promise<void> {
  try {
    const client = await temporalClient(ctx);
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(outboundCallWorkflowId(outboundCallId)).signal(outboundCallSessionSignal, { sessionId }));
  } catch (err) {
    if (!isWorkflowNotFound(err)) ctx.logger.warn({ err, outboundCallId, sessionId }, 'could not tell the outbound call its session');
  }
}

export interface AnswerOptions {
  /** Set for an outbound call (from the signed URL). */
  outboundCallId?: string;
  amd?: 'off' | 'continue' | 'disconnect';
}

/**
 * The answer to a call Twilio has connected (the `voice` webhook). A machine on an outbound call
 * set to `disconnect` is hung up on; otherwise the call's session starts (once per CallSid) and
 * its greeting is said.
 */
export async function answerCall(ctx: CoreContext, conn: ChannelConnectionDoc, form: TwilioForm, options: AnswerOptions): Promise<string> {
  const callSid = form.CallSid ?? '';
  if (!callSid) throw new DomainError('BAD_REQUEST', 'CallSid is required');
  const answeredBy = form.AnsweredBy ?? '';
  const machine = answeredBy.startsWith('machine') || answeredBy === 'fax';
  const inbound = !options.outboundCallId;
  if (options.amd === 'disconnect' && machine) {
    const call = callOf(ctx, conn, callSid, null);
    await recordVoiceEvent(ctx, call.ref, 'voice.call_ended', 0, { outcome: 'machine', answeredBy, outboundCallId: options.outboundCallId ?? null, turns: 0 });
    return hangUp();
  }
  if (conn.status !== 'active') return sayAndHangUp({}, VOICE_TEXTS.unavailable);
  const realtime = isRealtime(ctx, conn);

  const sessionId = voiceSessionId(conn._id, callSid);
  const call = callOf(ctx, conn, callSid, sessionId);
  const heardAt = Date.now();
  // An inbound call of a connection with recording on is recorded from its first answer (an
  // outbound call is recorded by the call itself, placed with Record=true).
  let recording: string | undefined;
  try {
    const earlier = await ctx.models.Session.findOne({ _id: sessionId, tenantId: conn.tenantId }, { status: 1 }).lean();
    // A webhook for a call whose session has ended (Twilio sent it again late) starts nothing.
    if (earlier?.status === 'ended') return sayAndHangUp({}, VOICE_TEXTS.unavailable);
    if (!earlier) {
      const scope = { tenantId: conn.tenantId, projectId: conn.projectId };
      const { agent, deployment } = await resolveNewSessionTarget(ctx.models, scope, {
        deploymentId: await pinnedDeploymentId(ctx, conn),
        environment: conn.environment,
        ...(conn.agentId ? { agentId: conn.agentId } : {}),
      });
      await startSession(
        ctx,
        {
          ...scope,
          agentId: agent.agentId,
          agentName: agent.agentName,
          channel: 'voice',
          environment: deployment?.environment ?? conn.environment,
          deploymentId: deployment?._id ?? null,
          sessionId,
          // The person on the line: who called in, or whom an outbound call reached.
          identity: { callerNumberIndex: callerNumberIndexOf(ctx, conn.tenantId, inbound ? form.From : form.To) },
          // The same person's contact: the number is in clear here only, and stays out of the workflow.
          caller: voiceCaller(inbound ? form.From : form.To),
        },
        // A concurrent or repeated webhook for the same call takes the session the first one made.
        { retrySafe: true },
      );
      await recordVoiceEvent(ctx, call.ref, 'voice.call_started', 0, {
        direction: inbound ? 'inbound' : 'outbound',
        outboundCallId: options.outboundCallId ?? null,
        from: form.From ? maskPhoneNumber(form.From) : null,
        to: form.To ? maskPhoneNumber(form.To) : null,
        answeredBy: answeredBy || null,
        agent: agent.agentName,
        deploymentId: deployment?._id ?? null,
      });
      if (inbound && conn.recordingEnabled) recording = webhookUrl(ctx, conn._id, 'recording-status', { sessionId });
    }
    if (options.outboundCallId) await tellOutboundCall(ctx, options.outboundCallId, sessionId);
  } catch (err) {
    ctx.logger.error({ err: isDomainError(err) ? { code: err.code, message: err.message } : err, connectionId: conn._id, sessionId }, 'a call could not start its session');
    return sayAndHangUp({}, VOICE_TEXTS.failure);
  }
  if (realtime) return bridgeToRoom(call, recording);
  const greeting: TurnUpdateInput = { clientMessageId: turnUpdateId(sessionId, 0), retryable: true, message: '', startOnly: true };
  return turnAnswer(call, { sessionId, turn: 0 }, greeting, { text: '', confidence: null, startedAt: heardAt, input: null }, recording);
}

/**
 * Whether the connection's calls go to a voice room. A `realtime` connection on a deployment whose
 * real-time voice has been unconfigured since (no LiveKit) falls back to `gather`, with a warning:
 * the call is still answered.
 */
function isRealtime(ctx: CoreContext, conn: ChannelConnectionDoc): boolean {
  if (conn.voiceMode !== 'realtime') return false;
  if (liveKitConfigured(ctx.config)) return true;
  ctx.logger.warn({ connectionId: conn._id }, 'a realtime channel connection answered over TwiML turns: real-time voice is not configured (LIVEKIT_URL)');
  return false;
}

/**
 * A `realtime` call: its voice room (made once per call, core/voice/phone-rooms.ts) and the
 * answer that connects the call's audio to the phone bridge (<Connect><Stream>). The voice agent
 * greets the caller in the room. A room that cannot be made (the open-room cap, LiveKit down) is
 * an apology and a hang-up, and the session ends.
 */
async function bridgeToRoom(call: Call, recording: string | undefined): Promise<string> {
  const { ctx, conn } = call;
  const sessionId = call.ref.sessionId!;
  try {
    await openPhoneRoom(ctx, conn, { sessionId, callSid: call.ref.callSid });
  } catch (err) {
    ctx.logger.error({ err: isDomainError(err) ? { code: err.code, message: err.message } : err, connectionId: conn._id, sessionId }, 'a call could not open its voice room');
    if (!(isDomainError(err) && err.code === 'CONFLICT')) await recordVoiceEvent(ctx, call.ref, 'voice.error', 0, { turn: 0, reason: 'room_failed' });
    void endCallSession(ctx, conn, sessionId, 'voice_room_failed');
    return sayAndHangUp({}, isDomainError(err) && err.code === 'CONFLICT' ? VOICE_TEXTS.unavailable : VOICE_TEXTS.failure);
  }
  return streamAnswer(call, 0, recording);
}

/** Where Twilio goes when a call's stream ends (the `stream-ended` URL's query, signed with it). */
export interface StreamEndedState {
  sessionId: string;
  /** How many times the call's stream has been connected again so far. */
  reconnects: number;
}

/**
 * Seconds of silence before the call's stream is connected again for the `reconnect`-th time: the
 * first at once (another voice agent takes it), then 1, 2, 4, 4 … s, time for a voice agent to
 * come back when none was there.
 */
export const reconnectPauseSeconds = (reconnect: number): number => (reconnect <= 1 ? 0 : Math.min(2 ** (reconnect - 2), 4));

/** <Connect><Stream> to the phone bridge for the call, then the <Redirect> Twilio takes when that stream ends. */
function streamAnswer(call: Call, reconnects: number, recording?: string): string {
  const { ctx, conn } = call;
  const sessionId = call.ref.sessionId!;
  const onEnd = webhookUrl(ctx, conn._id, 'stream-ended', { sessionId, reconnects } satisfies StreamEndedState);
  return connectStream(phoneStreamUrl(ctx.config, conn._id, sessionId), { sessionId }, { recording, pauseSeconds: reconnectPauseSeconds(reconnects), onEnd });
}

/**
 * The answer when a realtime call's Media Stream has ended (the `stream-ended` webhook, the
 * <Redirect> after <Connect>). A stream that ended because the call's room closed or its session
 * ended (the bridge's own end once the agent's last words played) is the end of the call: a bare
 * <Hangup/>. Otherwise the stream dropped (the voice agent process carrying it died or stopped):
 * while the room is open it is connected again (any voice agent's bridge can take it), up to
 * VOICE_STREAM_MAX_RECONNECTS times in the call; past that the caller hears an apology, the call
 * ends and so does its session (reason `voice_stream_lost`).
 */
export async function answerStreamEnded(ctx: CoreContext, conn: ChannelConnectionDoc, form: TwilioForm, state: StreamEndedState): Promise<string> {
  const callSid = form.CallSid ?? '';
  if (!callSid || voiceSessionId(conn._id, callSid) !== state.sessionId) throw new DomainError('FORBIDDEN', 'This call has no such session');
  const call = callOf(ctx, conn, callSid, state.sessionId);
  const log = { connectionId: conn._id, sessionId: state.sessionId, reconnects: state.reconnects };
  if (!(await phoneRoomOpen(ctx, conn, { sessionId: state.sessionId, callSid }))) {
    ctx.logger.info(log, 'a realtime call\'s stream ended with its room: the call ends');
    return hangUp();
  }
  const reconnect = state.reconnects + 1;
  if (reconnect > ctx.config.VOICE_STREAM_MAX_RECONNECTS || conn.status !== 'active' || !liveKitConfigured(ctx.config)) {
    ctx.logger.warn(log, 'a realtime call kept losing its stream: the call ends');
    await recordVoiceEvent(ctx, call.ref, 'voice.error', 0, { turn: 0, reason: 'stream_lost', reconnects: state.reconnects });
    // Ended before Twilio hears the hang-up, so the session's reason is this one, not the call's end.
    await endCallSession(ctx, conn, state.sessionId, 'voice_stream_lost');
    return sayAndHangUp({}, VOICE_TEXTS.streamLost);
  }
  ctx.logger.warn({ ...log, reconnect }, 'a realtime call\'s stream dropped while its room is open: connecting it again');
  return streamAnswer(call, reconnect);
}

/**
 * The answer to what a <Gather> (or its fall-through <Redirect>) posts: the caller's utterance as
 * the session's next turn, a poll for a turn still running, or a silence (reprompted once, then
 * goodbye and the session ends).
 */
export async function answerGather(ctx: CoreContext, conn: ChannelConnectionDoc, form: TwilioForm, state: GatherState): Promise<string> {
  const callSid = form.CallSid ?? '';
  // The URL names the session; the call must be the one it belongs to.
  if (!callSid || voiceSessionId(conn._id, callSid) !== state.sessionId) throw new DomainError('FORBIDDEN', 'This call has no such session');
  const call = callOf(ctx, conn, callSid, state.sessionId);
  const config = decodeConfig(state.vc);
  if (state.poll) {
    const polled = { text: 'x'.repeat(state.sc ?? 0), startedAt: state.rx ?? Date.now() };
    const input: TurnInput = state.turn === 0 ? null : state.dt ? 'dtmf' : 'speech';
    return turnAnswer(call, state, null, { ...polled, confidence: state.cf !== undefined ? state.cf / 1000 : null, input });
  }
  // Spoken words, else the keys the caller pressed (the <Gather> takes both).
  const speech = (form.SpeechResult ?? '').trim();
  const digits = speech ? '' : (form.Digits ?? '').trim();
  if (!speech && !digits) {
    const silences = (state.silence ?? 0) + 1;
    const final = silences >= NO_INPUT_LIMIT;
    await recordVoiceEvent(ctx, call.ref, 'voice.no_input', state.turn * 10 + silences, {
      turn: state.turn,
      timeoutMs: (config.silenceTimeout ?? VOICE_DEFAULTS.silenceTimeout) * 1000,
      final,
    });
    if (!final) return gatherNext(call, config, VOICE_TEXTS.reprompt, state.turn, silences);
    void endCallSession(ctx, conn, state.sessionId, 'no_input');
    return sayAndHangUp(config, VOICE_TEXTS.noInputGoodbye);
  }
  // Twilio's Confidence is 0 to 1; anything else is not a confidence.
  const stated = speech && form.Confidence !== undefined && form.Confidence !== '' ? Number(form.Confidence) : NaN;
  const confidence = stated >= 0 && stated <= 1 ? stated : null;
  const message = speech || digits;
  const input: TurnUpdateInput = { clientMessageId: turnUpdateId(state.sessionId, state.turn), retryable: true, message };
  return turnAnswer(call, state, input, { text: message, confidence, startedAt: Date.now(), input: speech ? 'speech' : 'dtmf' });
}

/** Ends the call's session (a missing or ended one is fine); errors are logged. */
async function endCallSession(ctx: CoreContext, conn: ChannelConnectionDoc, sessionId: string, reason: string): Promise<boolean> {
  try {
    const session = await ctx.models.Session.findOne({ _id: sessionId, tenantId: conn.tenantId }, { status: 1 }).lean();
    if (!session) return false;
    forgetRunningSession(ctx, conn.tenantId, sessionId);
    if (session.status !== 'ended') await endSessionWorkflow(ctx, { tenantId: conn.tenantId, sessionId }, reason);
    return true;
  } catch (err) {
    ctx.logger.warn({ err, sessionId }, 'could not end the session of a call');
    return true;
  }
}

/**
 * A call status callback (`voice-status`): once the call is over, its session ends (reason
 * `call_ended`) and its totals are recorded (`voice.call_ended`).
 */
export async function callStatusChanged(ctx: CoreContext, conn: ChannelConnectionDoc, form: TwilioForm): Promise<void> {
  const callSid = form.CallSid ?? '';
  const status = form.CallStatus ?? '';
  if (!callSid || !TERMINAL_CALL_STATUSES.has(status)) return;
  const sessionId = voiceSessionId(conn._id, callSid);
  const hadSession = await endCallSession(ctx, conn, sessionId, 'call_ended');
  // A call held in a voice room: the room closes with the call (a call that never had one is fine).
  if (hadSession && (await ctx.models.VoiceRoom.exists({ _id: sessionId, tenantId: conn.tenantId, status: 'active' }))) {
    await signalVoiceRoomEnd(await temporalClient(ctx), sessionId, 'session_ended').catch((err: unknown) => ctx.logger.warn({ err, sessionId }, 'could not close the voice room of a call'));
  }
  const duration = form.CallDuration !== undefined && form.CallDuration !== '' ? Number(form.CallDuration) : null;
  await recordCallEnded(ctx, callOf(ctx, conn, callSid, hadSession ? sessionId : null).ref, status, Number.isFinite(duration) ? duration : null);
}

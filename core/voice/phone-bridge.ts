// The phone bridge (docs/voice.md, "Phone callers"): a WebSocket listener in the voice agent
// process that takes Twilio Media Streams (<Connect><Stream>) and puts each call in its voice room
// as the participant `phone:<CallSid>`. The caller's μ-law audio is published into the room, the
// voice agent's audio is sent back as μ-law in 20 ms frames at the pace the room delivers it, and
// the call's stream ends when the room closes (Twilio then follows the <Redirect> after <Connect>,
// which hangs up; a stream that dropped instead is connected again, core/telephony/voice.ts
// answerStreamEnded, possibly to another process's bridge). Nothing joins a room before the upgrade's
// X-Twilio-Signature (over the stream's URL, under the connection's auth token) and the stream's
// `start` (its call is the URL's session, the room is open and the call's own) have been checked.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type Duplex } from 'node:stream';
import { AudioFrame, AudioSource, AudioStream, DisconnectReason, LocalAudioTrack, Room, RoomEvent, TrackKind, TrackPublishOptions, TrackSource, type RemoteParticipant, type RemoteTrack } from '@livekit/rtc-node';
import { AccessToken } from 'livekit-server-sdk';
import { WebSocketServer, type WebSocket } from 'ws';
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { type Models } from '../../db/models';
import { type Config } from '../../lib/config';
import { type Logger } from '../../lib/logger';
import { isValidTwilioSignature } from '../../providers/telephony/twilio-client';
import { mulawDecode, mulawEncode, Upsampler } from '../../providers/telephony/mulaw';
import {
  clearMessage,
  isMulaw8k,
  markMessage,
  MAX_MESSAGE_BYTES,
  mediaMessage,
  mediaPayload,
  MediaStreamProtocolError,
  parseMediaStreamMessage,
  type StartMessage,
} from '../../providers/telephony/media-stream';
import { connectionAuthToken, readChannelConnection } from '../telephony/connections';
import { voiceSessionId } from '../telephony/voice';
import { type CoreContext } from '../context';
import { liveKitClientUrl } from './livekit';
import { phoneBridgeBaseUrl, phoneIdentity, phoneStreamUrl } from './phone-rooms';

/** The voice agent's identity in rooms (activities/voice/attend.ts AGENT_IDENTITY). */
const AGENT_IDENTITY = 'agent';
/** The rate of the caller's track in the room; the line's 8 kHz is upsampled to it. */
const ROOM_RATE = 48_000;
const LINE_RATE = 8_000;
/** Twilio's frame: 20 ms of 8 kHz μ-law. */
const LINE_FRAME = LINE_RATE / 50;
/** How long a stream may take from the upgrade to its `start`. */
const START_WAIT_MS = 10_000;
/** How long the caller's audio waits for the voice agent's track before it is published anyway. */
const AGENT_WAIT_MS = 15_000;
/** How long the end of the agent's audio may take to play on the line once the room has closed. */
const DRAIN_WAIT_MS = 5_000;
/** The caller's frames waiting for the room's audio source at most (each 20 ms); beyond, they are dropped. */
const MAX_PENDING_FRAMES = 50;
/** Loudness (RMS of 16-bit samples) above which a frame is speech, for telling a barge-in. */
const LOUD_RMS = 500;
/** The participant token's lifetime: it is only used to join. */
const TOKEN_TTL_SECONDS = 120;

/** WebSocket close codes the bridge uses. */
export const BRIDGE_CLOSE = { normal: 1000, policy: 1008, tooBig: 1009, unavailable: 1013 } as const;

export interface PhoneBridgeDeps {
  config: Config;
  models: Models;
  logger: Logger;
}

export interface PhoneBridge {
  port: number;
  /** Streams open now. */
  streams(): number;
  close(): Promise<void>;
}

const CONNECTION_ID = /^cc_[a-z0-9]{1,60}$/;
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The connection and session an upgrade's path names (its last two segments), or null. */
export function streamTarget(path: string): { connectionId: string; sessionId: string } | null {
  const segments = path.split('?')[0]!.split('/').filter(Boolean);
  if (segments.length < 2) return null;
  const [connectionId, sessionId] = segments.slice(-2).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return '';
    }
  });
  return connectionId && sessionId && CONNECTION_ID.test(connectionId) && SESSION_ID.test(sessionId) ? { connectionId, sessionId } : null;
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  socket.destroy();
}

/** Starts the bridge's listener on `port` (0: any free port). */
export async function startPhoneBridge(deps: PhoneBridgeDeps, listen: { port: number; host: string; maxStreams: number }): Promise<PhoneBridge> {
  const ctx: CoreContext = { config: deps.config, models: deps.models, logger: deps.logger, temporal: { client: () => Promise.reject(new Error('the phone bridge uses no Temporal client')) } };
  const log = deps.logger.child({ component: 'phone-bridge' });
  const live = new Map<string, PhoneStream>();
  const sockets = new Set<WebSocket>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const server: Server = createServer((_req, res) => {
    res.writeHead(426, { 'Content-Type': 'text/plain', Upgrade: 'websocket' }).end('Twilio Media Streams only\n');
  });

  /** The connection whose token signed this upgrade over the stream's URL, or null (never saying why). */
  async function verified(req: IncomingMessage, target: { connectionId: string; sessionId: string }): Promise<ChannelConnectionDoc | null> {
    const signature = req.headers['x-twilio-signature'];
    // A base64 HMAC (SHA-1 or SHA-256) or nothing: no store read for anything else.
    if (typeof signature !== 'string' || !/^[A-Za-z0-9+/]{20,100}={0,2}$/.test(signature)) return null;
    const conn = await readChannelConnection(ctx, target.connectionId);
    if (!conn || conn.status !== 'active') return null;
    const authToken = await connectionAuthToken(ctx, conn);
    return isValidTwilioSignature(authToken, signature, phoneStreamUrl(deps.config, target.connectionId, target.sessionId), {}) ? conn : null;
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const target = streamTarget(req.url ?? '');
    if (!target) return refuseUpgrade(socket, 404, 'Not Found');
    if (sockets.size >= listen.maxStreams) return refuseUpgrade(socket, 503, 'Service Unavailable');
    verified(req, target).then(
      (conn) => {
        if (!conn) {
          log.warn({ connectionId: target.connectionId }, 'refused a media stream: its signature is missing or wrong');
          return refuseUpgrade(socket, 403, 'Forbidden');
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          sockets.add(ws);
          ws.once('close', () => sockets.delete(ws));
          new PhoneStream(deps, log, ws, conn, target.sessionId, live).run();
        });
      },
      (err: unknown) => {
        log.error({ err, connectionId: target.connectionId }, 'could not check a media stream\'s signature');
        refuseUpgrade(socket, 503, 'Service Unavailable');
      },
    );
  });

  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(listen.port, listen.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : listen.port;
  const publicUrl = phoneBridgeBaseUrl(deps.config);
  log.info({ port, host: listen.host, publicUrl }, 'phone bridge listening');
  if (deps.config.NODE_ENV === 'production' && publicUrl.startsWith('ws://')) {
    log.warn({ publicUrl }, 'Twilio opens Media Streams over wss:// only: set VOICE_BRIDGE_PUBLIC_URL (or an https PUBLIC_BASE_URL), or realtime calls will not connect');
  }
  return {
    port,
    streams: () => sockets.size,
    async close() {
      for (const ws of sockets) ws.close(BRIDGE_CLOSE.unavailable, 'the voice agent is stopping');
      await Promise.allSettled([...live.values()].map((s) => s.leave()));
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      wss.close();
    },
  };
}

/** One call's stream: from its `start` to its `stop`, the socket's close or the room's. */
class PhoneStream {
  private log: Logger;
  private streamSid: string | null = null;
  private callSid: string | null = null;
  private room: Room | null = null;
  private source: AudioSource | null = null;
  private readonly upsampler = new Upsampler(ROOM_RATE / LINE_RATE);
  private capture: Promise<void> = Promise.resolve();
  private pendingFrames = 0;
  private published = false;
  private ended = false;
  private readonly listening = new Set<string>();
  private readonly audioStreams: AudioStream[] = [];
  private readonly marks = new Map<string, () => void>();
  private markCount = 0;
  /** When the caller last sounded loud, and whether the agent is sounding now (for barge-in). */
  private callerLoudAt = 0;
  private agentTalking = false;
  private agentQuietMs = 0;

  constructor(
    private readonly deps: PhoneBridgeDeps,
    log: Logger,
    private readonly ws: WebSocket,
    private readonly conn: ChannelConnectionDoc,
    private readonly sessionId: string,
    private readonly live: Map<string, PhoneStream>,
  ) {
    this.log = log.child({ connectionId: conn._id, sessionId });
  }

  run(): void {
    const startTimer = setTimeout(() => {
      if (!this.streamSid) this.close(BRIDGE_CLOSE.policy, 'no start message');
    }, START_WAIT_MS);
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return this.close(BRIDGE_CLOSE.policy, 'binary frames are not Media Streams messages');
      let message;
      try {
        message = parseMediaStreamMessage(data);
      } catch (err) {
        this.log.warn({ reason: err instanceof MediaStreamProtocolError ? err.message : String(err) }, 'closed a media stream: a message out of protocol');
        return this.close(BRIDGE_CLOSE.policy, 'not a Media Streams message');
      }
      switch (message.event) {
        case 'start':
          clearTimeout(startTimer);
          if (this.streamSid) return this.close(BRIDGE_CLOSE.policy, 'a second start');
          this.streamSid = message.streamSid;
          void this.start(message).catch((err: unknown) => {
            this.log.error({ err }, 'a media stream could not join its voice room');
            this.close(BRIDGE_CLOSE.unavailable, 'could not join the voice room');
          });
          return;
        case 'media':
          if (message.streamSid !== this.streamSid) return this.close(BRIDGE_CLOSE.policy, 'media of another stream');
          return this.heard(mediaPayload(message));
        case 'mark':
          this.marks.get(message.mark.name)?.();
          return;
        case 'stop':
          return this.close(BRIDGE_CLOSE.normal, 'stopped');
        default:
          // `connected` opens every stream; keys pressed (`dtmf`) are not taken on this path.
          return;
      }
    });
    this.ws.on('close', () => {
      clearTimeout(startTimer);
      void this.leave();
    });
    this.ws.on('error', (err) => this.log.warn({ err }, 'media stream socket error'));
  }

  private close(code: number, reason: string): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
    void this.leave();
  }

  /**
   * The stream's call must be the URL's session (derived from the connection and the CallSid, as
   * the webhook made it), of the connection's account, with its room open and this call's own, and
   * no other stream of it in this process. Then, and only then, the room is joined.
   */
  private async start(message: StartMessage): Promise<void> {
    const { callSid, accountSid, mediaFormat } = message.start;
    if (accountSid !== this.conn.accountSid || voiceSessionId(this.conn._id, callSid) !== this.sessionId) return this.close(BRIDGE_CLOSE.policy, 'not this stream\'s call');
    if (!isMulaw8k(mediaFormat)) return this.close(BRIDGE_CLOSE.policy, 'only audio/x-mulaw at 8000 Hz, mono');
    if (this.live.has(callSid)) return this.close(BRIDGE_CLOSE.policy, 'the call has a stream already');
    this.callSid = callSid;
    this.live.set(callSid, this);
    const room = await this.deps.models.VoiceRoom.findOne({ _id: this.sessionId, tenantId: this.conn.tenantId }).lean();
    if (!room || room.status !== 'active' || room.identity !== phoneIdentity(callSid)) return this.close(BRIDGE_CLOSE.policy, 'the call has no open voice room');
    if (this.ended) return;
    await this.join(room.roomName, phoneIdentity(callSid));
  }

  private async join(roomName: string, identity: string): Promise<void> {
    const { config } = this.deps;
    if (!config.LIVEKIT_URL || !config.LIVEKIT_API_KEY || !config.LIVEKIT_API_SECRET) throw new Error('LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET must be set for the phone bridge');
    const token = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, name: 'Phone caller', ttl: TOKEN_TTL_SECONDS });
    token.addGrant({ roomJoin: true, room: roomName, canPublish: true, canSubscribe: true, canPublishData: false });
    const room = new Room();
    this.room = room;
    let agentHeard!: () => void;
    const agentArrived = new Promise<void>((resolve) => (agentHeard = resolve));
    room
      .on(RoomEvent.TrackSubscribed, (track: RemoteTrack, _publication, participant: RemoteParticipant) => {
        if (participant.identity === AGENT_IDENTITY && track.kind === TrackKind.KIND_AUDIO) {
          this.speakToLine(track);
          agentHeard();
        }
      })
      .on(RoomEvent.Disconnected, (reason: DisconnectReason) => {
        // The room closed (the session ended, the agent said goodbye): the rest of the agent's audio plays, then the line's stream ends.
        this.log.info({ reason: DisconnectReason[reason] ?? reason }, 'the voice room let the phone caller go');
        void this.drainAndClose();
      });
    await room.connect(liveKitClientUrl(config.LIVEKIT_URL), await token.toJwt(), { autoSubscribe: true, dynacast: false });
    if (this.ended) return void room.disconnect().catch(() => undefined);
    for (const participant of room.remoteParticipants.values()) {
      for (const publication of participant.trackPublications.values()) {
        if (participant.identity === AGENT_IDENTITY && publication.track && publication.kind === TrackKind.KIND_AUDIO) {
          this.speakToLine(publication.track);
          agentHeard();
        }
      }
    }
    // The caller's track goes up once the agent's is heard: the agent greets when it hears the caller, and the greeting is not lost.
    await Promise.race([agentArrived, new Promise((resolve) => setTimeout(resolve, AGENT_WAIT_MS))]);
    if (this.ended) return;
    this.source = new AudioSource(ROOM_RATE, 1, 200);
    await room.localParticipant!.publishTrack(LocalAudioTrack.createAudioTrack('phone', this.source), new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    this.published = true;
    this.log.info('a phone caller joined the voice room');
  }

  /** 20 ms of the caller's μ-law: into the room at its rate, in 10 ms frames, in order; dropped while nobody listens or the room falls behind. */
  private heard(mulaw: Uint8Array): void {
    const pcm = mulawDecode(mulaw);
    if (loudness(pcm) > LOUD_RMS) this.callerLoudAt = Date.now();
    const source = this.source;
    if (!this.published || !source || this.ended) return;
    if (this.pendingFrames >= MAX_PENDING_FRAMES) return;
    const samples = this.upsampler.push(pcm);
    const frame = ROOM_RATE / 100;
    this.pendingFrames++;
    this.capture = this.capture
      .then(async () => {
        for (let at = 0; at + frame <= samples.length; at += frame) await source.captureFrame(new AudioFrame(samples.slice(at, at + frame), ROOM_RATE, 1, frame));
      })
      .catch((err: unknown) => {
        if (!this.ended) this.log.debug({ err }, 'a caller frame was not taken');
      })
      .finally(() => this.pendingFrames--);
  }

  /** The agent's track to the line: 8 kHz from the room's stream, μ-law, 20 ms a message, as the room delivers it. */
  private speakToLine(track: RemoteTrack): void {
    if (!track.sid || this.listening.has(track.sid)) return;
    this.listening.add(track.sid);
    const stream = new AudioStream(track, { sampleRate: LINE_RATE, numChannels: 1 });
    this.audioStreams.push(stream);
    void (async () => {
      let pending = new Int16Array(0);
      try {
        for await (const frame of stream) {
          if (this.ended) return;
          const all = new Int16Array(pending.length + frame.data.length);
          all.set(pending);
          all.set(frame.data, pending.length);
          let at = 0;
          for (; at + LINE_FRAME <= all.length; at += LINE_FRAME) this.toLine(all.subarray(at, at + LINE_FRAME));
          pending = all.slice(at);
        }
      } catch (err) {
        if (!this.ended) this.log.warn({ err }, 'the agent\'s audio stream failed');
      } finally {
        this.listening.delete(track.sid!);
      }
    })();
  }

  private toLine(pcm: Int16Array): void {
    if (!this.streamSid || this.ws.readyState !== this.ws.OPEN) return;
    const loud = loudness(pcm) > LOUD_RMS;
    if (loud) {
      this.agentTalking = true;
      this.agentQuietMs = 0;
    } else if (this.agentTalking && (this.agentQuietMs += 20) >= 60) {
      this.agentTalking = false;
      // The agent stopped short while the caller talks: a barge-in. What Twilio still holds of the reply is dropped.
      if (Date.now() - this.callerLoudAt < 200) this.ws.send(clearMessage(this.streamSid));
    }
    this.ws.send(mediaMessage(this.streamSid, mulawEncode(pcm)));
  }

  /** Waits (bounded) until Twilio has played what it was sent, then ends the stream: the call's TwiML runs out and the call ends. */
  private async drainAndClose(): Promise<void> {
    if (this.ended) return;
    if (this.streamSid && this.ws.readyState === this.ws.OPEN) {
      const name = `end-${++this.markCount}`;
      const played = new Promise<void>((resolve) => this.marks.set(name, resolve));
      this.ws.send(markMessage(this.streamSid, name));
      await Promise.race([played, new Promise((resolve) => setTimeout(resolve, DRAIN_WAIT_MS))]);
    }
    this.close(BRIDGE_CLOSE.normal, 'the voice room closed');
  }

  /** Leaves the room (once): the voice agent sees the caller go. */
  async leave(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (this.callSid && this.live.get(this.callSid) === this) this.live.delete(this.callSid);
    for (const stream of this.audioStreams) await stream.cancel().catch(() => undefined);
    await this.source?.close().catch(() => undefined);
    const room = this.room;
    if (room) {
      room.removeAllListeners();
      await room.disconnect().catch(() => undefined);
      this.log.info('a phone caller left the voice room');
    }
  }
}

function loudness(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

// Voice metrics of phone calls: one row per event of a call (its start, each spoken turn, each
// time the caller said nothing, a transfer, the agent ending it, a turn that failed, its end with
// the call's totals), for voice analytics to aggregate (core/telephony/voice-analytics.ts). `_id` is `<connectionId>:<callSid>:<type>:<n>`, so a webhook
// Twilio retries writes nothing twice. Caller numbers appear masked only.
import { Schema, type Connection, type Model } from 'mongoose';

export const VOICE_EVENT_TYPES = ['voice.call_started', 'voice.turn', 'voice.no_input', 'voice.transfer', 'voice.agent_ended', 'voice.error', 'voice.call_ended'] as const;
export type VoiceEventType = (typeof VOICE_EVENT_TYPES)[number];

export interface VoiceEventDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** Null for a real-time voice room's events (`callSid` is then the room's name). */
  connectionId: string | null;
  callSid: string;
  /** Null for a call that never became a session (an answering machine hung up on). */
  sessionId: string | null;
  /** The connection's environment (`dev`, `staging`, `production`); null on rows written before it was recorded. */
  environment?: string | null;
  type: VoiceEventType;
  /** The turn it belongs to (0: the greeting; the call's events: 0). */
  turn: number;
  at: Date;
  data: Record<string, unknown>;
}

const VoiceEventSchema = new Schema<VoiceEventDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    connectionId: { type: String, default: null },
    callSid: { type: String, required: true },
    sessionId: { type: String, default: null },
    environment: { type: String, default: null },
    type: { type: String, required: true, enum: VOICE_EVENT_TYPES },
    turn: { type: Number, required: true },
    at: { type: Date, required: true },
    data: { type: Schema.Types.Mixed, default: {} },
  },
  { versionKey: false, minimize: false },
);
VoiceEventSchema.index({ tenantId: 1, projectId: 1, type: 1, at: -1 });
VoiceEventSchema.index({ tenantId: 1, sessionId: 1, at: 1 });
// A call's events, for its totals at the end.
VoiceEventSchema.index({ tenantId: 1, connectionId: 1, callSid: 1 });

export type VoiceEventModel = Model<VoiceEventDoc>;
export const voiceEventModel = (c: Connection): VoiceEventModel => c.model<VoiceEventDoc>('VoiceEvent', VoiceEventSchema, 'voice_events');

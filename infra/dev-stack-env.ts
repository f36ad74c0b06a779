// The environment that runs `npm start`'s stack (infra/dev-stack.ts) on ports and a data directory
// of the caller's choosing, with its own Temporal, store, Twilio fake and LiveKit server: for the tests and benches
// that start it beside a stack of the developer's own; and whether `npm start` runs the Twilio fake.
import { freePorts } from './processes';

export interface DevStackPorts {
  api: number;
  temporal: number;
  ui: number;
  mongo: number;
  postgres: number;
  backend: number;
  twilioFake: number;
  /** The LiveKit server's signalling port, its WebRTC TCP port and its one UDP port. */
  livekit: number;
  livekitTcp: number;
  livekitUdp: number;
  /** The voice agent's phone bridge. */
  voiceBridge: number;
}

export async function freeDevStackPorts(): Promise<DevStackPorts> {
  const [api, temporal, ui, mongo, postgres, backend, twilioFake, livekit, livekitTcp, livekitUdp, voiceBridge] = await freePorts(11);
  return { api: api!, temporal: temporal!, ui: ui!, mongo: mongo!, postgres: postgres!, backend: backend!, twilioFake: twilioFake!, livekit: livekit!, livekitTcp: livekitTcp!, livekitUdp: livekitUdp!, voiceBridge: voiceBridge! };
}

/** `base` (this process's environment by default) with the stack's data, ports and quiet logs, and no external Temporal, store, Twilio or LiveKit. */
export function devStackEnv(dataDir: string, ports: DevStackPorts, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    SWITCHBOARD_DATA_DIR: dataDir,
    PORT: String(ports.api),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.ui),
    FERRETDB_PORT: String(ports.mongo),
    POSTGRES_PORT: String(ports.postgres),
    SAMPLE_BACKEND_PORT: String(ports.backend),
    TWILIO_FAKE_PORT: String(ports.twilioFake),
    LIVEKIT_PORT: String(ports.livekit),
    LIVEKIT_RTC_TCP_PORT: String(ports.livekitTcp),
    LIVEKIT_RTC_UDP_PORT: String(ports.livekitUdp),
    VOICE_BRIDGE_PORT: String(ports.voiceBridge),
    LOG_LEVEL: 'warn',
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.MONGODB_URI;
  delete env.TWILIO_API_BASE_URL;
  delete env.TWILIO_ACCOUNT_SID;
  delete env.TWILIO_FAKE;
  delete env.LIVEKIT_URL;
  delete env.LIVEKIT_API_KEY;
  delete env.LIVEKIT_API_SECRET;
  delete env.VOICE_BRIDGE_HOST;
  delete env.VOICE_BRIDGE_PUBLIC_URL;
  return env;
}

/**
 * Whether `npm start` runs the Twilio fake and points the platform at it: `TWILIO_FAKE=1` or `0`
 * says so; unset, it runs unless the environment already points the SDK somewhere
 * (`TWILIO_API_BASE_URL`) or carries Twilio credentials of its own (`TWILIO_ACCOUNT_SID`).
 */
export function twilioFakeWanted(env: NodeJS.ProcessEnv): boolean {
  const flag = env.TWILIO_FAKE?.trim().toLowerCase();
  if (flag) {
    if (['1', 'true', 'yes', 'on'].includes(flag)) return true;
    if (['0', 'false', 'no', 'off'].includes(flag)) return false;
    throw new Error(`TWILIO_FAKE must be 1 or 0, got "${env.TWILIO_FAKE}"`);
  }
  return !env.TWILIO_API_BASE_URL && !env.TWILIO_ACCOUNT_SID;
}

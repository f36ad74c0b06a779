// The in-namespace half of the voice agent e2e (run as `unshare -n node --import tsx netns.ts <json>`):
// brings up lo and a veth pair (rtc-node's WebRTC ignores loopback), bridges Temporal and the store
// in from the test's unix sockets, runs livekit-server and voice agent processes, and plays the
// caller: an rtc-node participant that speaks espeak-ng phrases and reports the agent's audio and
// captions. It takes commands and sends events as JSON lines over the test's control socket.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { AudioFrame, AudioResampler, AudioSource, AudioStream, LocalAudioTrack, Room, RoomEvent, TrackKind, TrackPublishOptions, TrackSource } from '@livekit/rtc-node';
import { espeak, voicedMs, VOICED_RMS, type ScriptedPhrase } from './standins';

export interface NetnsOptions {
  dir: string;
  controlSocket: string;
  /** Host services reached from inside: 127.0.0.1:<port> here forwards to the unix socket. */
  bridges: { port: number; socket: string }[];
  livekit: { binary: string; port: number; key: string; secret: string };
  /**
   * Services here reached from the host: the test listens on 127.0.0.1:<port> outside and
   * connects to the unix socket, which this process serves by connecting to 127.0.0.1:<port> here.
   */
  exports?: { port: number; socket: string; fallbacks?: number[] }[];
  agentEnv: Record<string, string>;
  /** The voice agent's entry, relative to the root (default: the test entry with stand-ins). */
  agentEntry?: string;
  /** Chromium to run here with its DevTools protocol on this port (exported to the host by the test). */
  chromium?: { binary: string; port: number; args: string[] };
  phrases: string[];
  root: string;
}

const options = JSON.parse(process.argv[2]!) as NetnsOptions;
const children = new Set<ChildProcess>();
let control: net.Socket;
const send = (event: Record<string, unknown>) => control.write(`${JSON.stringify(event)}\n`);

function network(): void {
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  ip('link', 'set', 'lo', 'up');
  ip('link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
  ip('addr', 'add', '10.203.0.1/24', 'dev', 'v0');
  ip('link', 'set', 'v0', 'up');
  ip('link', 'set', 'v1', 'up');
}

async function bridges(): Promise<void> {
  for (const bridge of options.bridges) {
    const server = net.createServer((inside) => {
      const outside = net.connect(bridge.socket);
      inside.pipe(outside).pipe(inside);
      inside.on('error', () => outside.destroy());
      outside.on('error', () => inside.destroy());
    });
    await new Promise<void>((resolve) => server.listen(bridge.port, '127.0.0.1', resolve));
  }
}

/** Connects to the first of `ports` that accepts here, as a load balancer in front of several listeners would; null when none does. */
function connectFirst(ports: number[]): Promise<net.Socket | null> {
  const [port, ...rest] = ports;
  if (port === undefined) return Promise.resolve(null);
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', () => {
      socket.destroy();
      resolve(connectFirst(rest));
    });
  });
}

async function exportsOut(): Promise<void> {
  for (const exported of options.exports ?? []) {
    const server = net.createServer((outside) => {
      outside.pause();
      outside.on('error', () => undefined);
      void connectFirst([exported.port, ...(exported.fallbacks ?? [])]).then((inside) => {
        if (!inside) return void outside.destroy();
        outside.pipe(inside).pipe(outside);
        outside.resume();
        inside.on('error', () => outside.destroy());
        outside.on('error', () => inside.destroy());
        inside.on('close', () => outside.destroy());
      });
    });
    await new Promise<void>((resolve) => server.listen(exported.socket, resolve));
  }
}

async function chromium(): Promise<void> {
  if (!options.chromium) return;
  const { binary, port, args } = options.chromium;
  const child = spawn(binary, [...args, `--remote-debugging-port=${port}`, '--remote-debugging-address=127.0.0.1', `--user-data-dir=${path.join(options.dir, 'chromium')}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', process.env.SB_TEST_VOICE_LOG ? 'inherit' : 'ignore'],
  });
  children.add(child);
  await waitForPort(port);
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(true));
      s.on('error', () => resolve(false));
      s.on('connect', () => s.destroy());
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${port}`);
}

async function livekit(): Promise<void> {
  const { port, key, secret, binary } = options.livekit;
  const config = path.join(options.dir, 'livekit.yaml');
  writeFileSync(
    config,
    [
      `port: ${port}`,
      'bind_addresses: ["127.0.0.1"]',
      `rtc: {tcp_port: ${port + 1}, udp_port: ${port + 2}, use_external_ip: false, node_ip: 127.0.0.1, enable_loopback_candidate: true}`,
      `keys: {${key}: ${secret}}`,
      'logging: {level: warn}',
      '',
    ].join('\n'),
  );
  const child = spawn(binary, ['--config', config], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.add(child);
  await waitForPort(port);
}

// ── voice agent processes ─────────────────────────────────────────────────────────────────────

const agents = new Map<string, ChildProcess>();
const phrases: ScriptedPhrase[] = [];

async function startAgent(name: string, env: Record<string, string> = {}): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(options.root, options.agentEntry ?? 'test/support/voice-room/agent-entry.ts')], {
    cwd: options.root,
    env: { ...process.env, ...options.agentEnv, ...env, VOICE_TEST_PHRASES: JSON.stringify(phrases) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  agents.set(name, child);
  // Its process id, for a bench that measures its CPU and memory (the namespace shares the host's pids).
  send({ event: 'agentStarted', name, pid: child.pid });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(d));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      output = (output + d.toString()).slice(-8000);
      if (process.env.SB_TEST_VOICE_LOG) process.stderr.write(d);
      if (output.includes('voice agent started')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`voice agent ${name} exited (${code}):\n${output}`)));
  });
  child.stdout!.on('data', (d: Buffer) => {
    // Every agent log line goes to the test, which reads what it needs (joins, leaves).
    for (const line of d.toString().split('\n')) if (line.trim()) send({ event: 'agentLog', name, line });
  });
}

/** Ends a voice agent process: SIGKILL (it dies) or SIGTERM (it stops gracefully); resolves once it has exited. */
async function killAgent(name: string, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
  const child = agents.get(name);
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

// ── the caller ────────────────────────────────────────────────────────────────────────────────

const CALLER_RATE = 48_000;
const FRAME = CALLER_RATE / 100;
const CALLER_QUEUE_MS = 30;
/**
 * The callers, one per room. The unnamed one (commands without `caller`) sends its events as they
 * always were; a named one's events carry its name and the time they happened here (`at`, epoch
 * ms), for a bench that runs several rooms at once and times them.
 */
interface Caller {
  room: Room;
  speech: Int16Array[];
}
const callers = new Map<string, Caller>();
const DEFAULT_CALLER = '';
const spoken = new Map<string, Int16Array>();

const callerSend = (name: string, event: Record<string, unknown>) => send(name === DEFAULT_CALLER ? event : { ...event, caller: name, at: Date.now() });

async function phraseAudio(text: string): Promise<{ ms: number; at48k: Int16Array }> {
  const pcm = await espeak(text);
  const resampler = new AudioResampler(pcm.sampleRate, CALLER_RATE, 1);
  const frames = [...resampler.push(new AudioFrame(pcm.samples, pcm.sampleRate, 1, pcm.samples.length)), ...resampler.flush()];
  resampler.close();
  const at48k = new Int16Array(frames.reduce((n, f) => n + f.data.length, 0));
  let at = 0;
  for (const f of frames) {
    at48k.set(f.data, at);
    at += f.data.length;
  }
  return { ms: voicedMs(pcm), at48k };
}

async function join(name: string, url: string, token: string): Promise<void> {
  const room = new Room();
  const caller: Caller = { room, speech: [] };
  callers.set(name, caller);
  room.on(RoomEvent.DataReceived, (payload, _participant, _kind, topic) => {
    if (topic === 'captions') callerSend(name, { event: 'caption', caption: JSON.parse(new TextDecoder().decode(payload)) as unknown });
  });
  room.on(RoomEvent.TrackSubscribed, (track) => {
    if (track.kind !== TrackKind.KIND_AUDIO) return;
    void hear(name, new AudioStream(track, { sampleRate: 16000, numChannels: 1 }));
  });
  await room.connect(url, token, { autoSubscribe: true, dynacast: false });
  // A microphone's capture buffer: a browser's is a frame or two (the default of 1 s, or 100 ms,
  // would hold every phrase back that long on its way to the agent).
  const source = new AudioSource(CALLER_RATE, 1, CALLER_QUEUE_MS);
  await room.localParticipant!.publishTrack(LocalAudioTrack.createAudioTrack('mic', source), new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  // The microphone sends all the time: silence between phrases, as a real one would.
  void (async () => {
    const silence = new Int16Array(FRAME);
    let current: Int16Array | null = null;
    let at = 0;
    while (callers.get(name) === caller) {
      if (!current && caller.speech.length > 0) {
        current = caller.speech.shift()!;
        at = 0;
      }
      let samples = silence;
      if (current) {
        samples = new Int16Array(FRAME);
        samples.set(current.subarray(at, at + FRAME));
        at += FRAME;
        if (at >= current.length) {
          current = null;
          callerSend(name, { event: 'said' });
        }
      }
      await source.captureFrame(new AudioFrame(samples, CALLER_RATE, 1, FRAME)).catch(() => undefined);
    }
  })();
}

/** The agent's audio as the caller hears it: each start of sound after quiet, and the sound heard in all. */
async function hear(name: string, stream: AudioStream): Promise<void> {
  let loudMs = 0;
  let quietMs = 1000;
  let talking = false;
  for await (const frame of stream) {
    const ms = (frame.samplesPerChannel / frame.sampleRate) * 1000;
    let sum = 0;
    for (const s of frame.data) sum += s * s;
    const loud = Math.sqrt(sum / frame.data.length) > VOICED_RMS;
    if (loud) {
      loudMs += ms;
      if (!talking) callerSend(name, { event: 'agentAudio', state: 'start', loudMs });
      talking = true;
      quietMs = 0;
    } else if (talking && (quietMs += ms) >= 400) {
      talking = false;
      callerSend(name, { event: 'agentAudio', state: 'stop', loudMs });
    }
  }
}

// ── commands ──────────────────────────────────────────────────────────────────────────────────

type Command =
  | { id: number; cmd: 'startAgent'; name: string; env?: Record<string, string> }
  | { id: number; cmd: 'killAgent' | 'termAgent'; name: string }
  | { id: number; cmd: 'join'; url: string; token: string; caller?: string }
  | { id: number; cmd: 'say'; text: string; caller?: string }
  | { id: number; cmd: 'leave'; caller?: string }
  | { id: number; cmd: 'stop' };

async function run(command: Command): Promise<void> {
  switch (command.cmd) {
    case 'startAgent':
      return startAgent(command.name, command.env);
    case 'killAgent':
      return killAgent(command.name);
    case 'termAgent':
      return killAgent(command.name, 'SIGTERM');
    case 'join':
      return join(command.caller ?? DEFAULT_CALLER, command.url, command.token);
    case 'say': {
      const audio = spoken.get(command.text) ?? (await phraseAudio(command.text)).at48k;
      const caller = callers.get(command.caller ?? DEFAULT_CALLER);
      if (!caller) throw new Error(`no caller ${command.caller ?? ''} has joined`);
      caller.speech.push(audio);
      return;
    }
    case 'leave': {
      const name = command.caller ?? DEFAULT_CALLER;
      const caller = callers.get(name);
      callers.delete(name);
      await caller?.room.disconnect();
      return;
    }
    case 'stop':
      return stop(0);
  }
}

async function stop(code: number): Promise<never> {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all([...callers.values()].map((c) => c.room.disconnect().catch(() => undefined)));
  process.exit(code);
}

async function main(): Promise<void> {
  mkdirSync(options.dir, { recursive: true });
  network();
  await bridges();
  await livekit();
  await exportsOut();
  await chromium();
  // Each phrase is made once; its voiced length is what the recogniser stand-in goes by.
  for (const text of options.phrases) {
    const { ms, at48k } = await phraseAudio(text);
    phrases.push({ text, ms });
    spoken.set(text, at48k);
  }
  control = net.connect(options.controlSocket);
  await new Promise<void>((resolve) => control.once('connect', resolve));
  control.on('close', () => void stop(0));
  let buffered = '';
  control.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const command = JSON.parse(buffered.slice(0, nl)) as Command;
      buffered = buffered.slice(nl + 1);
      run(command).then(
        () => send({ event: 'done', id: command.id }),
        (err: unknown) => send({ event: 'done', id: command.id, error: err instanceof Error ? err.message : String(err) }),
      );
    }
  });
  send({ event: 'ready', phrases });
}

process.on('SIGTERM', () => void stop(0));
main().catch((err: unknown) => {
  process.stderr.write(`voice netns failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  void stop(1);
});

// The test's half of the voice agent e2e: unix-socket bridges to Temporal and the store (unix
// sockets cross network namespaces), the namespace process (netns.ts) started with `unshare -n`,
// and its control channel: commands out, events (captions, the agent's audio, agent log lines) in.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, toolPath } from '../../../infra/processes';
import { type Config } from '../../../lib/config';
import { childEnv } from '../worker-process';
import { eventually } from '../eventually';
import type { Caption } from '../../../activities/voice/attend';
import type { NetnsOptions } from './netns';

/** A named caller's events (join with `caller`) say whose they are and when they happened (epoch ms). */
export interface CallerStamp {
  caller?: string;
  at?: number;
}

export type NetnsEvent =
  | { event: 'ready'; phrases: { text: string; ms: number }[] }
  | ({ event: 'caption'; caption: Caption } & CallerStamp)
  | ({ event: 'agentAudio'; state: 'start' | 'stop'; loudMs: number } & CallerStamp)
  | { event: 'agentLog'; name: string; line: string }
  | { event: 'agentStarted'; name: string; pid: number }
  | ({ event: 'said' } & CallerStamp)
  | { event: 'done'; id: number; error?: string };

export interface LiveKitSettings {
  port: number;
  key: string;
  secret: string;
}

export interface VoiceNetns {
  events: NetnsEvent[];
  url: string;
  command(command: Record<string, unknown>): Promise<void>;
  /** Resolves with the first event (from index `from` on) that `match` accepts. */
  next<E extends NetnsEvent>(match: (e: NetnsEvent) => e is E, from?: number, timeoutMs?: number): Promise<E>;
  close(): Promise<void>;
}

const hostPort = (address: string): { host: string; port: number } => {
  const url = new URL(address.includes('://') ? address : `tcp://${address}`);
  return { host: url.hostname, port: Number(url.port) };
};

export interface VoiceNetnsExtras {
  /** Host ports to reach from inside besides Temporal and the store (the API, for a browser). */
  hostPorts?: number[];
  /** Ports inside to reach from the host at the same port number (LiveKit's, for the API). */
  exportPorts?: number[];
  /**
   * For an exported port, ports inside tried next when nothing listens on it (as a load balancer
   * in front of several voice agents' bridges would): `{ 17915: [17916] }`.
   */
  exportFallbacks?: Record<number, number[]>;
  agentEntry?: string;
  chromium?: { binary: string; port: number; args: string[] };
}

export async function startVoiceNetns(config: Config, livekit: LiveKitSettings, phrases: string[], agentEnv: Record<string, string>, extras: VoiceNetnsExtras = {}): Promise<VoiceNetns> {
  const dir = path.join(os.tmpdir(), `sb-voice-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  const bridges: NetnsOptions['bridges'] = [];
  for (const [name, target] of [
    ['temporal', hostPort(config.TEMPORAL_ADDRESS)],
    ['store', hostPort(config.MONGODB_URI)],
    ...(extras.hostPorts ?? []).map((port) => [`host-${port}`, { host: '127.0.0.1', port }] as const),
  ] as const) {
    const socket = path.join(dir, `${name}.sock`);
    const server = net.createServer((inside) => {
      const outside = net.connect(target.port, target.host);
      for (const s of [inside, outside]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      }
      inside.pipe(outside).pipe(inside);
      inside.on('error', () => outside.destroy());
      outside.on('error', () => inside.destroy());
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    servers.push(server);
    bridges.push({ port: target.port, socket });
  }

  // Ports inside, reached from the host at the same number through a socket the namespace serves.
  const exportsIn: NonNullable<NetnsOptions['exports']> = [];
  for (const port of extras.exportPorts ?? []) {
    const socket = path.join(dir, `export-${port}.sock`);
    const server = net.createServer((outside) => {
      const inside = net.connect(socket);
      for (const s of [inside, outside]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      }
      outside.pipe(inside).pipe(outside);
      inside.on('error', () => outside.destroy());
      outside.on('error', () => inside.destroy());
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    servers.push(server);
    exportsIn.push({ port, socket, ...(extras.exportFallbacks?.[port] ? { fallbacks: extras.exportFallbacks[port] } : {}) });
  }

  const events: NetnsEvent[] = [];
  const controlSocket = path.join(dir, 'control.sock');
  let control: net.Socket | null = null;
  const connected = new Promise<void>((resolve) => {
    const server = net.createServer((socket) => {
      control = socket;
      sockets.add(socket);
      let buffered = '';
      socket.on('data', (d: Buffer) => {
        buffered += d.toString();
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          events.push(JSON.parse(buffered.slice(0, nl)) as NetnsEvent);
          buffered = buffered.slice(nl + 1);
        }
      });
      resolve();
    });
    server.listen(controlSocket);
    servers.push(server);
  });

  const options: NetnsOptions = {
    dir,
    controlSocket,
    bridges,
    livekit: { binary: toolPath('livekit-server'), ...livekit },
    exports: exportsIn,
    ...(extras.agentEntry ? { agentEntry: extras.agentEntry } : {}),
    ...(extras.chromium ? { chromium: extras.chromium } : {}),
    agentEnv: Object.fromEntries(Object.entries(childEnv(config, agentEnv)).filter((e): e is [string, string] => e[1] !== undefined)),
    phrases,
    root: ROOT,
  };
  const child: ChildProcess = spawn('unshare', ['-n', process.execPath, '--import', 'tsx', path.join(ROOT, 'test/support/voice-room/netns.ts'), JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));

  const next = async <E extends NetnsEvent>(match: (e: NetnsEvent) => e is E, from = 0, timeoutMs = 60_000): Promise<E> => {
    const found = await eventually(
      () => Promise.resolve(events.slice(from).find(match) ?? (child.exitCode !== null ? 'exited' : null)),
      (e) => e !== null,
      timeoutMs,
      50,
    );
    if (found === 'exited') throw new Error('the voice namespace process exited');
    if (found === null) throw new Error(`no such event in ${timeoutMs} ms; events so far:\n${events.map((e) => JSON.stringify(e)).join('\n').slice(-6000)}`);
    return found as E;
  };
  await Promise.race([connected, exited.then((code) => Promise.reject(new Error(`the voice namespace process exited (${code})`)))]);
  await next((e): e is Extract<NetnsEvent, { event: 'ready' }> => e.event === 'ready', 0, 120_000);

  let ids = 0;
  return {
    events,
    url: `ws://127.0.0.1:${livekit.port}`,
    next,
    async command(command) {
      const id = ++ids;
      control!.write(`${JSON.stringify({ ...command, id })}\n`);
      const done = await next((e): e is Extract<NetnsEvent, { event: 'done' }> => e.event === 'done' && e.id === id, 0, 120_000);
      if (done.error) throw new Error(`${String(command.cmd)}: ${done.error}`);
    },
    async close() {
      if (child.exitCode === null) {
        control?.write(`${JSON.stringify({ cmd: 'stop', id: 0 })}\n`);
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      // Chromium's helpers may still be writing its profile for a while after it was killed (seconds
      // on a loaded machine): removed once they stop, or left in the temp dir rather than failing
      // a file whose tests have passed.
      for (let attempt = 1; ; attempt++) {
        try {
          rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
          break;
        } catch (err) {
          if (attempt >= 10) {
            process.stderr.write(`voice harness: ${dir} left behind (${err instanceof Error ? err.message : String(err)})\n`);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
    },
  };
}

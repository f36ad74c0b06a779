// Real-time voice: the caller's end of speech to the agent's first audio, stage by stage, and how
// many rooms one voice agent process holds. Prints figures; asserts nothing.
//   node --import tsx bench/voice.ts [--turns 20] [--rooms 1,2,4,8]      (as root: it makes a network namespace)
// Its own stack (bench/support/stack.ts) with LiveKit, the product's voice agent process
// (workers/voice-agent.ts, the offline pair: pocketsphinx on a grammar of the caller's phrases from
// VOICE_STT_HINTS, espeak-ng) and rtc-node callers inside a network namespace
// (test/support/voice-room/), one caller per room. Rooms are made by POST /api/v1/voice/sessions;
// the agent answers each utterance with a fixed RESPOND (no model). At each room count the rooms
// run at once, each caller speaking a phrase, waiting for the whole reply, and speaking again; the
// figures come from the agent's own `voice.turn` rows (endpointing, speech to text, the turn, text
// to speech to its first chunk, and end of speech to the first audio frame sent) and from what
// the caller heard (the transport: the caller's wait less the agent's).
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { ENERGY_VAD_DEFAULTS } from '../providers/voice/energy-vad';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { concatPcm } from '../providers/voice/pcm';
import { ESPEAK_SAMPLE_RATE, OfflineTextToSpeech } from '../providers/voice/offline-tts';
import { type PcmAudio } from '../providers/voice/types';
import { espeak, VOICED_RMS } from '../test/support/voice-room/standins';
import { startVoiceNetns, type NetnsEvent, type VoiceNetns } from '../test/support/voice-room/harness';
import { client } from '../test/support/http';
import { publishAgent } from '../test/support/agents';
import { CpuMeter } from './support/cpu';
import { jsonClient } from './support/json-client';
import { startBenchStack } from './support/stack';
import { helpDeskAgent } from '../test/support/voice-room/help-desk';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '20' },
    rooms: { type: 'string', default: '1,2,4,8' },
  },
});
const TURNS = Number(values.turns);
const LEVELS = values.rooms.split(',').map(Number);

// The energy VAD's default silence that ends an utterance (providers/voice/energy-vad.ts); the
// agent below sets no speech timeout, so this is its endpointing delay.
const VAD_SILENCE_MS = ENERGY_VAD_DEFAULTS.silenceMs;
const REPLY = 'Our opening hours are nine until five on weekdays.';
const PHRASES = ['i would like to check the status of my order', 'thank you very much'];
const GREETING = 'Hello, how can I help?';
const AGENT = helpDeskAgent(GREETING, REPLY);
const LIVEKIT = { port: 17900, key: 'benchkey', secret: randomBytes(24).toString('hex') };
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret };

// ── audio edges ───────────────────────────────────────────────────────────────────────────────

/** The 10 ms windows of `audio` louder than the caller's threshold: the first and the last, in ms from the start. */
function loudEdges(audio: PcmAudio): { firstMs: number; lastEndMs: number; totalMs: number } {
  const win = Math.round(audio.sampleRate / 100);
  let first = -1;
  let last = -1;
  for (let i = 0, w = 0; i + win <= audio.samples.length; i += win, w++) {
    let sum = 0;
    for (let j = i; j < i + win; j++) sum += audio.samples[j]! * audio.samples[j]!;
    if (Math.sqrt(sum / win) > VOICED_RMS) {
      if (first < 0) first = w;
      last = w;
    }
  }
  return { firstMs: first * 10, lastEndMs: (last + 1) * 10, totalMs: (audio.samples.length * 1000) / audio.sampleRate };
}

async function speak(tts: OfflineTextToSpeech, text: string): Promise<PcmAudio> {
  const chunks: PcmAudio[] = [];
  for await (const chunk of tts.synthesize(text, { language: 'en-US' })) chunks.push(chunk);
  return concatPcm(chunks, ESPEAK_SAMPLE_RATE);
}

// ── process figures ───────────────────────────────────────────────────────────────────────────

/** The process and its descendants (the agent's pocketsphinx helper). */
function tree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

function rssMb(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

// ── statistics ────────────────────────────────────────────────────────────────────────────────

function pct(samples: number[]): { n: number; p50: number; p95: number } {
  const sorted = samples.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  return { n: sorted.length, p50: at(50), p95: at(95) };
}
const line = (label: string, samples: number[]) => {
  const s = pct(samples);
  return `  ${label.padEnd(34)} p50 ${s.p50.toFixed(0).padStart(5)} ms   p95 ${s.p95.toFixed(0).padStart(5)} ms   (n=${s.n})`;
};
// The figures, printed as they come and again together at the end (LiveKit and the agent's
// runtime log among them on the same terminal).
const figures: string[] = [];
const print = (text: string) => {
  figures.push(text);
  console.log(text);
};
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

// ── one room's calls ──────────────────────────────────────────────────────────────────────────

interface Turn {
  sessionId: string;
  turn: number;
  phrase: string;
  saidAt: number;
  heardAt: number;
}

type Ev<K extends NetnsEvent['event']> = Extract<NetnsEvent, { event: K }>;

async function room(ns: VoiceNetns, api: ReturnType<typeof jsonClient>, auth: Record<string, string>, projectId: string, name: string, turns: number, out: Turn[], failures: string[]): Promise<void> {
  const created = await api.post('/api/v1/voice/sessions', { projectId, agentId: 'Help_Desk' }, auth);
  if (created.status !== 201) throw new Error(`voice session: ${created.status} ${JSON.stringify(created.body)}`);
  const { sessionId, url, token } = created.body as { sessionId: string; url: string; token: string };
  const mine = (e: NetnsEvent) => 'caller' in e && e.caller === name;
  const from = ns.events.length;
  await ns.command({ cmd: 'join', caller: name, url, token });
  try {
    // The greeting, heard to its end.
    const greeting = await ns.next((e): e is Ev<'caption'> => mine(e) && e.event === 'caption' && e.caption.role === 'agent' && e.caption.turn === 0, from, 120_000);
    await ns.next((e): e is Ev<'agentAudio'> => mine(e) && e.event === 'agentAudio' && e.state === 'stop', ns.events.indexOf(greeting), 60_000);
    for (let turn = 1; turn <= turns; turn++) {
      const phrase = PHRASES[turn % PHRASES.length]!;
      const at = ns.events.length;
      await ns.command({ cmd: 'say', caller: name, text: phrase });
      let step = 'its phrase said';
      try {
        const said = await ns.next((e): e is Ev<'said'> => mine(e) && e.event === 'said', at, 30_000);
        step = "the agent's audio";
        const start = await ns.next((e): e is Ev<'agentAudio'> => mine(e) && e.event === 'agentAudio' && e.state === 'start', ns.events.indexOf(said), 30_000);
        step = `the agent's caption of turn ${turn}`;
        await ns.next((e): e is Ev<'caption'> => mine(e) && e.event === 'caption' && e.caption.role === 'agent' && e.caption.turn === turn, at, 30_000);
        step = "the end of the agent's audio";
        await ns.next((e): e is Ev<'agentAudio'> => mine(e) && e.event === 'agentAudio' && e.state === 'stop', ns.events.indexOf(start), 60_000);
        out.push({ sessionId, turn, phrase, saidAt: said.at!, heardAt: start.at! });
      } catch {
        // A phrase the recogniser missed is no turn: the room's timed turns end there.
        const heard = ns.events.filter((e): e is Ev<'caption'> => mine(e) && e.event === 'caption' && e.caption.role === 'user' && e.caption.turn === turn).map((e) => e.caption.text);
        failures.push(`${name} turn ${turn}: no ${step} in 30 s (the agent heard: ${heard.length ? heard.map((h) => JSON.stringify(h)).join(', ') : 'nothing'})`);
        return;
      }
      // A breath between turns.
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    await api.post(`/api/v1/voice/sessions/${sessionId}/end`, {}, auth).catch(() => undefined);
    await ns.command({ cmd: 'leave', caller: name }).catch(() => undefined);
  }
}

// ── main ──────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('run as root: the bench makes a network namespace (unshare -n)');
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
    cleanups.length = 0;
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  process.once('SIGTERM', () => void cleanup().then(() => process.exit(143)));
  try {
    const maxRooms = Math.max(...LEVELS);
    const stack = await startBenchStack({ name: 'voicebench', env: { ...VOICE_ENV, VOICE_MAX_ROOMS: String(maxRooms * 2 + 4), VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: '60' } });
    cleanups.push(() => stack.close());
    const { ctx, baseUrl } = stack;
    const tenant = await createTenant(ctx.models, { name: 'Voice bench', slug: 'voice-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Voice' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    await publishAgent(client(baseUrl), { projectId: project._id, adminKey: key }, 'Help_Desk', AGENT);
    const api = jsonClient(baseUrl);
    cleanups.push(() => Promise.resolve(api.close()));
    const auth = { authorization: `Bearer ${key}` };

    // Where the loud part of each sound lies, to time the caller's voice and the agent's, not their silences.
    const tts = new OfflineTextToSpeech();
    const trailMs = new Map<string, number>();
    for (const p of PHRASES) {
      // The caller's phrases as the caller makes them (test/support/voice-room/netns.ts).
      const e = loudEdges(await espeak(p));
      trailMs.set(p, e.totalMs - e.lastEndMs);
    }
    const replyLeadMs = loudEdges(await speak(tts, REPLY)).firstMs;
    await tts.close();

    const ns = await startVoiceNetns(
      stack.config,
      LIVEKIT,
      [],
      { ...VOICE_ENV, LOG_LEVEL: 'info', VOICE_STT_HINTS: [...PHRASES, 'goodbye'].join('|'), VOICE_AGENT_MAX_ROOMS: String(maxRooms) },
      { exportPorts: [LIVEKIT.port], agentEntry: 'workers/voice-agent.ts' },
    );
    cleanups.push(() => ns.close());
    await ns.command({ cmd: 'startAgent', name: 'agent' });
    const agentPid = ns.events.find((e): e is Ev<'agentStarted'> => e.event === 'agentStarted')!.pid;

    print(`voice bench: ${os.cpus().length} cores, offline pair (pocketsphinx grammar, espeak-ng), fixed RESPOND, one voice agent process (pid ${agentPid})`);
    print(`floor: endpointing = the VAD's configured silence, ${VAD_SILENCE_MS} ms (fixed by design; included in every figure below)`);
    print(`transport = caller's wait (its last voiced sample sent → first loud agent frame heard) − the row's latencyMs − the reply's leading silence (${replyLeadMs} ms)`);
    print(`  (the caller's last voiced sample = its 'said' event less the phrase's trailing silence: ${PHRASES.map((p) => `${trailMs.get(p)!.toFixed(0)} ms`).join(', ')})`);

    for (const rooms of LEVELS) {
      const perRoom = Math.max(3, Math.ceil(TURNS / rooms));
      const turns: Turn[] = [];
      const failures: string[] = [];
      const loadBefore = load();
      const meter = new CpuMeter({ agent: { tree: agentPid } });
      let peakRss = 0;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, tree(agentPid).reduce((sum, pid) => sum + rssMb(pid), 0))), 500);
      const cpuBefore = meter.snapshot();
      const started = Date.now();
      await Promise.all(
        Array.from({ length: rooms }, (_, i) =>
          room(ns, api, auth, project._id, `r${rooms}-${i}`, perRoom, turns, failures).catch((err: unknown) => {
            failures.push(`r${rooms}-${i}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
          }),
        ),
      );
      const wallMs = Date.now() - started;
      const cpuMs = meter.snapshot().agent! - cpuBefore.agent!;
      clearInterval(sampler);
      const rssNow = tree(agentPid).reduce((sum, pid) => sum + rssMb(pid), 0);

      // The agent's rows for these turns.
      const rows = await ctx.models.VoiceEvent.find({ tenantId: tenant._id, type: 'voice.turn', sessionId: { $in: [...new Set(turns.map((t) => t.sessionId))] }, turn: { $gte: 1 } }).lean();
      const byKey = new Map(rows.map((r) => [`${r.sessionId}/${r.turn}`, r.data as Record<string, number | null>]));
      const stage = (name: string) => turns.map((t) => byKey.get(`${t.sessionId}/${t.turn}`)?.[name] ?? NaN);
      const latency = stage('latencyMs');
      const callerWait = turns.map((t) => t.heardAt - (t.saidAt - trailMs.get(t.phrase)!) - replyLeadMs);
      const transport = callerWait.map((w, i) => w - latency[i]!);

      print(`\n${rooms} room(s) at once, ${perRoom} turns each: ${turns.length} turns timed, ${failures.length} missed; load average ${loadBefore} → ${load()}`);
      print(line('end of speech → first audio (agent)', latency));
      print(line('  endpointing', stage('endpointingMs')));
      print(line('  speech to text', stage('sttMs')));
      print(line('  the turn', stage('turnMs')));
      print(line('  text to speech, first chunk', stage('ttsFirstChunkMs')));
      print(line('  transport', transport));
      print(line('end of speech → first audio (caller)', callerWait));
      print(`  agent process: CPU ${((cpuMs / wallMs) * 100).toFixed(0)}% of one core over ${(wallMs / 1000).toFixed(0)} s; RSS peak ${peakRss.toFixed(0)} MB, at end ${rssNow.toFixed(0)} MB (with its pocketsphinx helper)`);
      for (const f of failures.slice(0, 5)) print(`  missed: ${f}`);
    }
  } finally {
    await cleanup();
    if (figures.length) console.log(`\n── figures ──\n${figures.join('\n')}`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

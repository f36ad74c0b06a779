// Real-time voice from the browser, offline, end to end: headless Chromium with a fake microphone
// that plays espeak-ng speech opens the widget on a shop's page and presses its microphone button;
// the API makes the voice session and its room (POST /api/v1/voice/sessions, the voiceRoom
// workflow), the product's voice agent process (workers/voice-agent.ts, with the offline pair:
// pocketsphinx decoding against a grammar of the test phrases, espeak-ng speaking) takes the room,
// greets, hears the visitor and answers. The widget shows the captions, the page hears the agent,
// the session's transcript has the visitor's words and the agent's answer, and the visitor's second
// phrase cuts the answer short (barge-in). Chromium, LiveKit and the voice agent run inside a
// network namespace this file makes (rtc-node's WebRTC ignores loopback); the API, Temporal and the
// store stay outside, bridged over unix sockets, and the API reaches LiveKit the same way.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createPublicKey } from '../../../core/sdk/public-keys';
import { concatPcm, silence, toWav } from '../../../providers/voice/pcm';
import { ESPEAK_SAMPLE_RATE, OfflineTextToSpeech } from '../../../providers/voice/offline-tts';
import { type PcmAudio } from '../../../providers/voice/types';
import { chromiumPath } from '../../support/browser';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startVoiceNetns, type VoiceNetns } from '../../support/voice-room/harness';
import { helpDeskAgent } from '../../support/voice-room/help-desk';

jest.setTimeout(300_000);

const GREETING = 'Hello, you are through to the help desk. How can I help?';
const ANSWER =
  'Thank you for calling. Our opening hours are from nine in the morning until five in the evening on weekdays, and from ten until two on saturdays. ' +
  'We are closed on sundays and on public holidays. If you would like to speak to someone about an order, please have your order number ready.';
const ASK = 'i would like to check the status of my order';
const CUT_IN = 'thank you very much';

const HELP_DESK = helpDeskAgent(GREETING, ANSWER);

// The shop's site: a page of the test's own, on loopback (a secure context, which the microphone needs).
let shopSite: Server;
let SHOP: string;
const LIVEKIT = { port: 17890, key: 'testkey', secret: randomBytes(24).toString('hex') };
const CDP_PORT = 17895;
// The API reaches the namespace's LiveKit at the same address the browser and the agent use inside it.
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret };

let stack: TestStack;
let t: SeededTenant;
let ns: VoiceNetns;
let browser: Browser;
let publicKey: string;
let dir: string;

/** The microphone's recording: silence while the greeting plays, the question, then the cut-in while the answer plays. */
async function microphoneWav(file: string): Promise<void> {
  const tts = new OfflineTextToSpeech();
  const speak = async (text: string) => {
    const chunks: PcmAudio[] = [];
    for await (const chunk of tts.synthesize(text, { language: 'en-US' })) chunks.push(chunk);
    return concatPcm(chunks, ESPEAK_SAMPLE_RATE);
  };
  try {
    const [ask, cutIn] = [await speak(ASK), await speak(CUT_IN)];
    const pause = (s: number) => silence(s * 1000, ESPEAK_SAMPLE_RATE);
    writeFileSync(file, toWav(concatPcm([pause(6), ask, pause(6), cutIn, pause(4)], ESPEAK_SAMPLE_RATE)));
  } finally {
    await tts.close();
  }
}

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: VOICE_ENV });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), { projectId: t.projectId, adminKey: t.adminKey }, 'Help_Desk', HELP_DESK);
  dir = path.join(os.tmpdir(), `sb-voice-browser-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  const wav = path.join(dir, 'microphone.wav');
  await microphoneWav(wav);
  shopSite = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(
      `<!doctype html><title>Shop</title><script src="${stack.baseUrl}/sdk/widget.js" data-public-key="${publicKey}" data-project="${t.projectId}" data-open="true" data-voice-audio-processing="false"></script>`,
    );
  });
  await new Promise<void>((resolve) => shopSite.listen(0, '127.0.0.1', resolve));
  const shopPort = (shopSite.address() as AddressInfo).port;
  SHOP = `http://127.0.0.1:${shopPort}`;
  publicKey = (await createPublicKey(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId }, { name: 'shop', allowedOrigins: [SHOP], environment: 'dev', createdBy: null })).key;
  const apiPort = Number(new URL(stack.baseUrl).port);
  ns = await startVoiceNetns(
    stack.config,
    LIVEKIT,
    [],
    { ...VOICE_ENV, LOG_LEVEL: 'info', VOICE_STT_HINTS: [ASK, CUT_IN, 'goodbye'].join('|') },
    {
      hostPorts: [apiPort, shopPort],
      exportPorts: [LIVEKIT.port, CDP_PORT],
      agentEntry: 'workers/voice-agent.ts',
      chromium: {
        binary: chromiumPath(),
        port: CDP_PORT,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--use-fake-device-for-media-stream',
          '--use-fake-ui-for-media-stream',
          `--use-file-for-fake-audio-capture=${wav}%noloop`,
          '--autoplay-policy=no-user-gesture-required',
        ],
      },
    },
  );
  await ns.command({ cmd: 'startAgent', name: 'agent' });
  browser = await chromium.connectOverCDP(`http://127.0.0.1:${CDP_PORT}`);
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await ns?.close();
  await stack?.close();
  await new Promise((resolve) => (shopSite ? shopSite.close(resolve) : resolve(undefined)));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs in the page: keeps in `window.heardRms` the loudest moment of the agent's audio (the elements the call attaches). */
const HEARING = `
  window.heardRms = 0;
  const watched = new Set();
  const context = new AudioContext();
  setInterval(() => {
    for (const el of document.querySelectorAll('[data-switchboard-voice]')) {
      if (watched.has(el) || !(el.srcObject instanceof MediaStream)) continue;
      watched.add(el);
      const analyser = context.createAnalyser();
      context.createMediaStreamSource(el.srcObject).connect(analyser);
      const data = new Float32Array(analyser.fftSize);
      setInterval(() => {
        analyser.getFloatTimeDomainData(data);
        let sum = 0;
        for (const v of data) sum += v * v;
        window.heardRms = Math.max(window.heardRms, Math.sqrt(sum / data.length));
      }, 50);
    }
  }, 100);
`;

/** The shop's page with the widget, served by the test at the shop's origin. */
async function shopPage(): Promise<Page> {
  const page = await (browser.contexts()[0] ?? (await browser.newContext())).newPage();
  await page.goto(`${SHOP}/`);
  // What the page hears of the agent: the loudest moment of each audio element the call attaches.
  await page.evaluate(HEARING);
  return page;
}

test('a visitor talks to the agent from the widget: greeting, captions, an answer heard, a transcript, and a barge-in', async () => {
  const page = await shopPage();
  const mic = page.getByRole('button', { name: 'Start a voice call' });
  await mic.waitFor({ state: 'visible', timeout: 30_000 });
  await mic.click();
  await page.getByRole('button', { name: 'End the voice call' }).waitFor({ timeout: 30_000 });

  // The greeting, the visitor's question as recognised, and the agent's answer, as captions in the conversation.
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.getByText(GREETING).waitFor({ timeout: 60_000 });
  await log.getByText(ASK).waitFor({ timeout: 90_000 });
  await log.getByText(ANSWER.slice(0, 40)).waitFor({ timeout: 60_000 });

  const room = await eventually(
    () => stack.ctx.models.VoiceRoom.findOne({ tenantId: t.tenantId }).lean(),
    (r) => r !== null,
    10_000,
    100,
  );
  const sessionId = room!.sessionId;

  // The page heard the agent's voice.
  const heard = await eventually(
    () => page.evaluate<number>('window.heardRms'),
    (rms) => rms > 0.02,
    30_000,
    200,
  );
  expect(heard).toBeGreaterThan(0.02);

  // The second phrase comes while the answer plays: it cuts the answer short and is a turn itself.
  await log.getByText(CUT_IN).waitFor({ timeout: 90_000 });
  const answered = await eventually(
    () => stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, sessionId, type: 'voice.turn', turn: 1 }).lean(),
    (row) => row !== null,
    30_000,
    200,
  );
  expect(answered!.data).toMatchObject({ source: 'room', input: 'speech', interrupted: true });
  expect(answered!.data.confidence).toEqual(expect.any(Number));

  // The session's transcript: the greeting, the visitor's words and the agent's answer.
  const transcript = await eventually(
    async () => (await client(stack.baseUrl).get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey })).body as { messages: { role: string; content: string }[] },
    (body) => body.messages?.some((m) => m.role === 'user' && m.content === CUT_IN) ?? false,
    30_000,
    200,
  );
  const words = transcript.messages.map(({ role, content }) => ({ role, content }));
  expect(words[0]).toEqual({ role: 'assistant', content: GREETING });
  expect(words).toEqual(expect.arrayContaining([{ role: 'user', content: ASK }, { role: 'assistant', content: ANSWER }, { role: 'user', content: CUT_IN }]));

  // Hanging up leaves the room; the call's end is said in the conversation.
  await page.getByRole('button', { name: 'End the voice call' }).click();
  await log.getByText('The voice call ended.').waitFor({ timeout: 10_000 });
});

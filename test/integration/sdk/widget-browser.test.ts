// The chat widget in a real headless Chromium, against the real API and worker: the demo page
// (served as the dev stack serves it, with a public key seeded as `npm start` seeds it) opens a
// chat by its accessible names, converses with the seeded support desk through a handoff to its
// billing specialist, survives a network drop and a reload in the same session, and a page on an
// origin the key does not list gets a clear refusal; on a site its key lists, an agent's buttons and
// rich content show and a press sends the action. A reply the offline model writes comes through
// the stream route, and a stream cut after its first delta keeps that text on screen, is replayed
// from the last event seen and shows the whole reply once. A screenshot of the open widget is saved.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page, type Request, type Route } from 'playwright-core';
import { seedDevProject } from '../../../infra/seed-project';
import { devStackOrigins, ensureDevPublicKey } from '../../../infra/seed-widget';
import { ROOT } from '../../../infra/processes';
import { createPublicKey } from '../../../core/sdk/public-keys';
import { foldDeltas } from '../../../core/chat/turn-stream';
import { launchChromium } from '../../support/browser';
import { publishAgent } from '../../support/agents';
import { client } from '../../support/http';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';

// A browser and a stack, and turns through Temporal.
jest.setTimeout(180_000);

// An agent whose step offers buttons and rich content, in the tenant's other project.
const SHOP = `AGENT: Shop
GOAL: "Take a payment."
FLOW:
  steps: [menu, talk]
  menu:
    REASONING: false
    RESPOND: "Pay now or talk to someone?"
    RICH_CONTENT:
      web:
        title: "Invoice INV-123456"
        text: "Total: 120 EUR"
        url: "https://shop.example.com/invoices/INV-123456"
    ACTIONS:
      - id: talk
        label: "Talk to someone"
    ON_ACTION:
      talk: talk
  talk:
    REASONING: false
    RESPOND: "Connecting you."
    THEN: COMPLETE
`;

const OUTPUT_DIR = process.env.TEST_OUTPUT_DIR ?? path.join(ROOT, 'test-output');
const STORAGE_PREFIX = 'switchboard-widget:';

let stack: TestStack;
let t: SeededTenant;
let publicKey: string;
let shopKey: string;
// A tenant whose only agent the offline model answers, so its replies come as deltas.
let modelTenant: SeededTenant;
let modelKey: string;
let otherSite: Server;
let otherOrigin: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, t);
  const port = Number(new URL(stack.baseUrl).port);
  publicKey = (await ensureDevPublicKey(stack.ctx.models, t, devStackOrigins(port))).key;
  // What the dev stack sets for its API (infra/dev-stack.ts).
  stack.ctx.config = { ...stack.ctx.config, WIDGET_DEMO_PUBLIC_KEY: publicKey, WIDGET_DEMO_PROJECT_ID: t.projectId };
  // Another site: the demo's snippet, on an origin its key does not list; and at /shop the other
  // project's widget, whose key lists this site.
  otherSite = createServer((req, res) => {
    const [key, project] = req.url === '/shop' ? [shopKey, t.otherProjectId] : req.url === '/model' ? [modelKey, modelTenant.projectId] : [publicKey, t.projectId];
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><title>Elsewhere</title><script src="${stack.baseUrl}/sdk/widget.js" data-public-key="${key}" data-project="${project}"></script>`);
  });
  await new Promise<void>((resolve) => otherSite.listen(0, '127.0.0.1', resolve));
  otherOrigin = `http://127.0.0.1:${(otherSite.address() as AddressInfo).port}`;
  const shop = { tenantId: t.tenantId, projectId: t.otherProjectId };
  await publishAgent(client(stack.baseUrl), { ...shop, adminKey: t.adminKey }, 'Shop', SHOP);
  shopKey = (await createPublicKey(stack.ctx, shop, { name: 'shop', allowedOrigins: [otherOrigin], environment: 'dev', createdBy: null })).key;
  modelTenant = await seedTenant(stack.ctx);
  const modelProject = { tenantId: modelTenant.tenantId, projectId: modelTenant.projectId };
  await publishAgent(client(stack.baseUrl), { ...modelProject, adminKey: modelTenant.adminKey }, 'Helper', 'AGENT: Helper\nGOAL: "Answer questions about the weather."\n');
  modelKey = (await createPublicKey(stack.ctx, modelProject, { name: 'model', allowedOrigins: [otherOrigin], environment: 'dev', createdBy: null })).key;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 720 } });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => otherSite?.close(resolve));
  await stack?.close();
});

const log = () => page.getByRole('log');
// Browser code as text: the tests' TypeScript has no DOM types.
const STORED = `Object.keys(localStorage).filter((k) => k.startsWith('${STORAGE_PREFIX}'))`;
const savedState = () => page.evaluate(`(() => { const [k] = ${STORED}; return k ? JSON.parse(localStorage.getItem(k)) : null; })()`) as Promise<{ sessionId: string | null } | null>;
type Node = { getRootNode(): { activeElement?: unknown } };
const isFocused = (e: unknown) => e === (e as Node).getRootNode().activeElement;
const background = (e: unknown) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor;

async function say(text: string, how: 'enter' | 'button' = 'enter', on: Page = page) {
  const box = on.getByRole('textbox', { name: 'Message', exact: true });
  await box.fill(text);
  if (how === 'enter') await box.press('Enter');
  else await on.getByRole('button', { name: 'Send', exact: true }).click();
}

interface SseEvent {
  raw: string;
  id: string | undefined;
  event: string | undefined;
  data: Record<string, unknown>;
}

/** The events of a whole SSE body, each with its text as sent (heartbeat comments have no event). */
function sseEvents(body: string): SseEvent[] {
  return body
    .split('\n\n')
    .filter((raw) => raw.trim())
    .map((raw) => {
      const field = (name: string) => raw.split('\n').find((line) => line.startsWith(`${name}:`))?.slice(name.length + 1).trim();
      const data = field('data');
      return { raw, id: field('id'), event: field('event'), data: data ? (JSON.parse(data) as Record<string, unknown>) : {} };
    });
}

it.each(['widget', 'voice'])('serves %s.js with its type, cache headers and ETag, and 304 for a current copy', async (name) => {
  const res = await fetch(`${stack.baseUrl}/sdk/${name}.js`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('public, max-age=300');
  const etag = res.headers.get('etag')!;
  expect(etag).toMatch(/^"[\w-]+"$/);
  const code = await res.text();
  process.stdout.write(`${name}.js: ${code.length} bytes\n`);
  // The voice client is its own script, loaded on a call's start: the widget does not carry it.
  if (name === 'widget') expect(code).not.toContain('livekit');
  else expect(code).toContain('SwitchboardVoice');
  const again = await fetch(`${stack.baseUrl}/sdk/${name}.js`, { headers: { 'If-None-Match': etag } });
  expect(again.status).toBe(304);
  expect(await again.text()).toBe('');
  expect(again.headers.get('etag')).toBe(etag);
});

it('opens the demo by its accessible names and converses through a handoff, keyboard only where it can', async () => {
  await page.goto(`${stack.baseUrl}/demo`);
  const launcher = page.getByRole('button', { name: 'Open chat', exact: true });
  // The page's own `button { background: hotpink !important }` does not reach into the widget.
  expect(await launcher.evaluate(background)).not.toBe('rgb(255, 105, 180)');
  await launcher.click();
  const box = page.getByRole('textbox', { name: 'Message', exact: true });
  expect(await box.evaluate(isFocused)).toBe(true);
  expect(await log().getAttribute('aria-live')).toBe('polite');

  await say('hello');
  await log().getByText('I can help with billing').waitFor();
  await say('I have a question about my invoice', 'button');
  await log().getByText('What is the invoice number?').first().waitFor();
  // The handoff is said in the conversation, and the reply is the specialist's.
  await log().getByText('Now chatting with Billing Agent').waitFor();
  expect(await log().locator('.msg.agent .who').last().textContent()).toBe('Billing Agent');
  expect((await savedState())?.sessionId).toEqual(expect.any(String));

  mkdirSync(OUTPUT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(OUTPUT_DIR, 'widget.png') });

  // Esc closes the window and gives the focus back to the launcher.
  await box.press('Escape');
  expect(await page.getByRole('dialog').isVisible()).toBe(false);
  expect(await launcher.evaluate(isFocused)).toBe(true);
});

it('keeps the session across a network drop and a reload', async () => {
  const before = await savedState();
  await page.reload();
  await page.getByRole('button', { name: 'Open chat', exact: true }).click();
  // The conversation so far, read again from the session's transcript.
  await log().getByText('I have a question about my invoice').waitFor();
  expect(await log().locator('.msg.agent', { hasText: 'What is the invoice number?' }).count()).toBe(1);
  await context.setOffline(true);
  try {
    await say('I am not sure');
    await page.getByRole('status').getByText('Reconnecting').waitFor();
  } finally {
    await context.setOffline(false);
  }
  // The same session: the billing specialist still waits for the invoice number and asks again.
  await log().locator('.msg.agent', { hasText: 'invoice number' }).last().waitFor();
  expect(await log().locator('.msg.agent .who').last().textContent()).toBe('Billing Agent');
  expect((await savedState())?.sessionId).toBe(before!.sessionId);
  expect(await page.getByRole('alert').isVisible()).toBe(false);
  expect(pageErrors).toEqual([]);
});

it('rates a reply, and sends a file with the next message', async () => {
  const rated = page.waitForResponse((r) => r.url() === `${stack.baseUrl}/api/v1/feedback`);
  const helpful = log().getByRole('button', { name: 'Helpful', exact: true }).last();
  await helpful.click();
  expect((await rated).status()).toBe(201);
  await log().getByRole('button', { name: 'Helpful', exact: true, pressed: true }).waitFor();

  // The hidden file input behind the "Attach a file" button.
  expect(await page.getByRole('button', { name: 'Attach a file', exact: true }).isVisible()).toBe(true);
  const uploaded = page.waitForResponse((r) => r.url().endsWith('/attachments') && r.request().method() === 'POST');
  await page.locator('input[type=file]').setInputFiles({ name: 'invoice.txt', mimeType: 'text/plain', buffer: Buffer.from('Invoice INV-123456\nTotal: 120 EUR\n') });
  const attachmentId = ((await (await uploaded).json()) as { attachmentId: string }).attachmentId;
  await page.getByRole('button', { name: 'Remove invoice.txt', exact: true }).waitFor();
  const sent = page.waitForRequest((r) => r.url() === `${stack.baseUrl}/api/v1/chat/send`);
  await say('Here it is');
  expect((await sent).postDataJSON()).toMatchObject({ sessionId: (await savedState())!.sessionId, message: 'Here it is', attachmentIds: [attachmentId] });
  await log().locator('.msg.agent').nth(3).waitFor();
  expect(await page.getByRole('alert').isVisible()).toBe(false);
});

it('refuses a page on an origin the key does not list, and says so in the widget', async () => {
  const other = await context.newPage();
  try {
    await other.goto(otherOrigin);
    await other.getByRole('button', { name: 'Open chat', exact: true }).click();
    const alert = other.getByRole('alert');
    await alert.getByText('is not an allowed origin').waitFor();
    expect(await alert.textContent()).toContain(otherOrigin);
    // Nothing was issued to that page.
    expect(await other.evaluate(STORED)).toEqual([]);
  } finally {
    await other.close();
  }
});

it("shows an agent's rich content and buttons on another site, and a press sends the action", async () => {
  const shop = await context.newPage();
  try {
    await shop.goto(`${otherOrigin}/shop`);
    await shop.getByRole('button', { name: 'Open chat', exact: true }).click();
    const box = shop.getByRole('textbox', { name: 'Message', exact: true });
    await box.fill('hi');
    await box.press('Enter');
    const conversation = shop.getByRole('log');
    const talk = conversation.getByRole('button', { name: 'Talk to someone', exact: true });
    await talk.waitFor();
    await conversation.getByText('Total: 120 EUR').waitFor();
    expect(await conversation.getByRole('link', { name: 'https://shop.example.com/invoices/INV-123456' }).getAttribute('target')).toBe('_blank');
    // The agent chat, streamed or not.
    const pressed = shop.waitForRequest((r) => /\/api\/v1\/chat\/agent(\/stream)?$/.test(r.url()) && r.method() === 'POST');
    await talk.click();
    expect((await pressed).postDataJSON()).toMatchObject({ projectId: t.otherProjectId, message: 'Talk to someone', action: { id: 'talk' } });
    await conversation.getByText('Connecting you.').waitFor();
    // Pressed once: the row's buttons are spent.
    expect(await talk.isDisabled()).toBe(true);
  } finally {
    await shop.close();
  }
});

it('answers the demo page only where it is configured', async () => {
  const { WIDGET_DEMO_PUBLIC_KEY: _k, WIDGET_DEMO_PROJECT_ID: _p, ...rest } = stack.ctx.config;
  const configured = stack.ctx.config;
  stack.ctx.config = { ...rest, WIDGET_DEMO_PUBLIC_KEY: undefined, WIDGET_DEMO_PROJECT_ID: undefined };
  try {
    expect((await fetch(`${stack.baseUrl}/demo`)).status).toBe(404);
  } finally {
    stack.ctx.config = configured;
  }
});

describe('a reply the model writes, streamed', () => {
  const stream = () => `${stack.baseUrl}/api/v1/chat/agent/stream`;
  let chat: Page;
  const replies = () => chat.getByRole('log').locator('.msg.agent .text');
  const shown = () => chat.evaluate('window.__shown') as Promise<string[]>;

  beforeAll(async () => {
    chat = await context.newPage();
    chat.on('pageerror', (e) => pageErrors.push(e.message));
    await chat.goto(`${otherOrigin}/model`);
    await chat.getByRole('button', { name: 'Open chat', exact: true }).click();
    // Every text an agent reply shows, in order: each setting of a reply's text adds a text node.
    await chat.evaluate(`(() => {
      window.__shown = [];
      const log = document.querySelector('[data-switchboard-widget]').shadowRoot.querySelector('[role=log]');
      new MutationObserver((records) => {
        for (const r of records) if (r.target.matches?.('.msg.agent .text')) for (const n of r.addedNodes) window.__shown.push(n.textContent);
      }).observe(log, { childList: true, subtree: true });
    })()`);
  });
  afterAll(async () => {
    await chat?.close();
  });

  it('comes through the stream route as deltas, and the widget shows what they add up to', async () => {
    const plain: string[] = [];
    const onRequest = (r: Request) => {
      if (r.url() === `${stack.baseUrl}/api/v1/chat/agent`) plain.push(r.method());
    };
    chat.on('request', onRequest);
    try {
      const streamed = chat.waitForResponse((r) => r.url() === stream() && r.request().method() === 'POST');
      await say('Will it rain today?', 'enter', chat);
      const res = await streamed;
      expect(res.headers()['content-type']).toContain('text/event-stream');
      await chat.getByRole('log').getByRole('button', { name: 'Helpful', exact: true }).waitFor();
      // What the stream sent (the page's copy of a streamed body cannot be read back): the turn's
      // events replayed whole, with the tenant's admin key.
      const turn = await stack.ctx.models.TurnStream.findOne({ tenantId: modelTenant.tenantId }).lean();
      const replay = await fetch(`${stream()}/${String(turn!._id)}`, { headers: { authorization: `Bearer ${modelTenant.adminKey}` } });
      expect(replay.status).toBe(200);
      const events = sseEvents(await replay.text());
      const deltas = events.filter((e) => e.event === 'delta');
      expect(deltas.length).toBeGreaterThan(0);
      const reply = events.find((e) => e.event === 'response')!.data.response as string;
      expect(reply).toContain('Will it rain today?');
      expect(foldDeltas(deltas)).toBe(reply);
      expect(await replies().allTextContents()).toEqual([reply]);
      expect(await shown()).toContain(reply);
      // Not the plain route, not even its preflight.
      expect(plain).toEqual([]);
    } finally {
      chat.off('request', onRequest);
    }
  });

  it('keeps the text of a stream cut mid-turn, replays after the last event seen and shows the reply once', async () => {
    await chat.evaluate('window.__shown = []');
    // The start answers the real stream up to its first delta and then ends: no response event.
    let cut: { turnId: string; lastId: string | undefined; shown: string; reply: string } | null = null;
    await chat.route(
      stream(),
      async (route: Route) => {
        const response = await route.fetch();
        const events = sseEvents(await response.text());
        const first = events.findIndex((e) => e.event === 'delta');
        const kept = events.slice(0, first + 1);
        cut = {
          turnId: String(events.find((e) => e.event === 'turn')?.data.turnId),
          lastId: kept.at(-1)?.id,
          shown: first < 0 ? '' : foldDeltas([events[first]!]),
          reply: String(events.find((e) => e.event === 'response')?.data.response),
        };
        await route.fulfill({ response, body: kept.map((e) => `${e.raw}\n\n`).join('') });
      },
      { times: 1 },
    );
    // Each replay is held until the test has looked at what the cut stream left on screen.
    const replays: Request[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await chat.route(
      (url) => url.pathname.startsWith('/api/v1/chat/agent/stream/'),
      async (route: Route) => {
        replays.push(route.request());
        await released;
        await route.continue();
      },
    );
    try {
      const replayed = chat.waitForRequest((r) => new URL(r.url()).pathname.startsWith('/api/v1/chat/agent/stream/'));
      await say('And tomorrow?', 'enter', chat);
      const replay = await replayed;
      const { turnId, lastId, shown: partial, reply } = cut!;
      // The first delta is on screen, and the turn's response has not reached the page.
      expect(partial).not.toBe('');
      expect(reply.startsWith(partial)).toBe(true);
      expect(await replies().last().textContent()).toBe(partial);
      await chat.getByRole('status').getByText('Reconnecting').waitFor();
      // The replay names the turn and the last event the page read.
      const url = new URL(replay.url());
      expect(url.pathname).toBe(`/api/v1/chat/agent/stream/${turnId}`);
      expect(url.searchParams.get('after')).toBe(lastId);
      expect(replay.method()).toBe('GET');
      release();

      await chat.getByRole('log').getByRole('button', { name: 'Helpful', exact: true }).nth(1).waitFor();
      // The whole reply once, and never a doubled text on the way.
      expect((await replies().allTextContents()).slice(1)).toEqual([reply]);
      const texts = await shown();
      expect(texts).toContain(partial);
      expect(texts.filter((text) => !reply.startsWith(text))).toEqual([]);
      expect(replays).toHaveLength(1);
      expect(await chat.getByRole('alert').isVisible()).toBe(false);
      expect(pageErrors).toEqual([]);
    } finally {
      release();
      await chat.unrouteAll({ behavior: 'ignoreErrors' });
    }
  });
});

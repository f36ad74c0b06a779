// The chat widget in a real headless Chromium, against the real API and worker: the demo page
// (served as the dev stack serves it, with a public key seeded as `npm start` seeds it) opens a
// chat by its accessible names, converses with the seeded support desk through a handoff to its
// billing specialist, survives a network drop and a reload in the same session, and a page on an
// origin the key does not list gets a clear refusal; on a site its key lists, an agent's buttons and
// rich content show and a press sends the action. A screenshot of the open widget is saved.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { seedDevProject } from '../../../infra/seed-project';
import { devStackOrigins, ensureDevPublicKey } from '../../../infra/seed-widget';
import { ROOT } from '../../../infra/processes';
import { createPublicKey } from '../../../core/sdk/public-keys';
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
    const [key, project] = req.url === '/shop' ? [shopKey, t.otherProjectId] : [publicKey, t.projectId];
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><title>Elsewhere</title><script src="${stack.baseUrl}/sdk/widget.js" data-public-key="${key}" data-project="${project}"></script>`);
  });
  await new Promise<void>((resolve) => otherSite.listen(0, '127.0.0.1', resolve));
  otherOrigin = `http://127.0.0.1:${(otherSite.address() as AddressInfo).port}`;
  const shop = { tenantId: t.tenantId, projectId: t.otherProjectId };
  await publishAgent(client(stack.baseUrl), { ...shop, adminKey: t.adminKey }, 'Shop', SHOP);
  shopKey = (await createPublicKey(stack.ctx, shop, { name: 'shop', allowedOrigins: [otherOrigin], environment: 'dev', createdBy: null })).key;
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

async function say(text: string, how: 'enter' | 'button' = 'enter') {
  const box = page.getByRole('textbox', { name: 'Message', exact: true });
  await box.fill(text);
  if (how === 'enter') await box.press('Enter');
  else await page.getByRole('button', { name: 'Send', exact: true }).click();
}

it('serves the script with its type, cache headers and ETag, and 304 for a current copy', async () => {
  const res = await fetch(`${stack.baseUrl}/sdk/widget.js`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('public, max-age=300');
  const etag = res.headers.get('etag')!;
  expect(etag).toMatch(/^"[\w-]+"$/);
  const code = await res.text();
  process.stdout.write(`widget.js: ${code.length} bytes\n`);
  const again = await fetch(`${stack.baseUrl}/sdk/widget.js`, { headers: { 'If-None-Match': etag } });
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

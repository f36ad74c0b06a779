// The operator's first look at the dev stack's Temporal Web UI: `npm start`'s stack (its Temporal
// dev server with the UI, the API with the codec endpoint), a session started through the API, and
// a headless Chromium opening that session's page finds the user's message decoded, with no
// sign-in and no UI setting, while Temporal itself holds it encrypted. The same stack serves the
// widget demo page with the public key it seeded for its own origins.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { type Browser } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { freeDevStackPorts, startDevStack, type DevStack, type DevStackPorts } from '../support/dev-stack';
import { client } from '../support/http';
import { historyBytes } from '../support/workflow-history';

// A whole stack and a browser: minutes on a busy machine.
jest.setTimeout(300_000);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-web-ui-test-'));
const MESSAGE = `Please look at invoice ${randomBytes(4).toString('hex')} for the lighthouse keeper`;

let ports: DevStackPorts;
let stack: DevStack;
let browser: Browser;
let sessionId: string;
let creds: { apiKey: string; projectId: string; publicKey: string };

beforeAll(async () => {
  ports = await freeDevStackPorts();
  const dataDir = path.join(tmp, 'data');
  // As `npm start` is run: nothing about the codec set by hand.
  stack = await startDevStack(dataDir, ports);
  creds = JSON.parse(readFileSync(path.join(dataDir, 'dev-credentials.json'), 'utf8')) as typeof creds;
  const chat = await client(`http://127.0.0.1:${ports.api}`).post('/api/v1/chat/agent', { key: creds.apiKey, json: { projectId: creds.projectId, message: MESSAGE } });
  expect(chat.status).toBe(200);
  sessionId = chat.body.sessionId;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

it('keeps the message encrypted in Temporal', async () => {
  const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
  try {
    const history = await new Client({ connection }).workflow.getHandle(`session/${sessionId}`).fetchHistory();
    expect(history.events!.length).toBeGreaterThan(0);
    expect(historyBytes(history).includes(MESSAGE)).toBe(false);
  } finally {
    await connection.close();
  }
});

it("shows the session's input and the user's message decoded on the session's page", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const decodes: number[] = [];
  page.on('response', (res) => {
    if (res.url() === `http://localhost:${ports.api}/codec/decode`) decodes.push(res.status());
  });
  // As an operator opens it: by the UI's own name, localhost.
  await page.goto(`http://localhost:${ports.ui}/namespaces/default/workflows/${encodeURIComponent(`session/${sessionId}`)}`);
  // The workflow's input, decoded: the session it runs.
  await page.getByText(`"sessionId": "${sessionId}"`).first().waitFor({ timeout: 60_000 });
  // The message arrived as the update that ran the turn; its row opens to show the request.
  await page.locator('tr[data-testid="event-summary-row"]', { hasText: 'Workflow Execution Update Accepted' }).first().click({ timeout: 60_000 });
  await page.getByText(MESSAGE).first().waitFor({ timeout: 60_000 });
  const text = await page.locator('body').innerText();
  expect(text).not.toContain('Codec Server could not connect');
  expect(text).not.toContain('YmluYXJ5L2VuY3J5cHRlZA=='); // base64 of binary/encrypted: a payload left encoded
  expect(decodes.length).toBeGreaterThan(0);
  expect(decodes.every((status) => status === 200)).toBe(true);
  await page.close();
});

it('prints the widget demo page and serves it with the public key it seeded for its own origins', async () => {
  const demo = `http://localhost:${ports.api}/demo`;
  expect(stack.output()).toContain(`Widget demo    ${demo}`);
  const page = await fetch(demo);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain(`src="/sdk/widget.js" data-public-key="${creds.publicKey}" data-project="${creds.projectId}"`);
  for (const origin of [`http://localhost:${ports.api}`, `http://127.0.0.1:${ports.api}`]) {
    const init = await fetch(`http://127.0.0.1:${ports.api}/api/v1/sdk/init`, {
      method: 'POST',
      headers: { Origin: origin, 'X-Public-Key': creds.publicKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ projectId: creds.projectId }),
    });
    expect(init.status).toBe(200);
  }
});

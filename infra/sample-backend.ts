// The sample back-end the dev stack serves on loopback for the seeded support-desk agents, so
// their tools answer offline: invoices and refunds, flights and hotels, KYC checks and accounts;
// and a sample receiver for the dev project's HTTP-async subscription.
// Answers are deterministic (fixed tables, or derived from the request) and include "not found".
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';

/** Invoices the billing API knows; every other id is 404. */
export const SAMPLE_INVOICES: Readonly<Record<string, { amount: number; status: 'open' | 'paid' | 'refunded' }>> = {
  'INV-123456': { amount: 120, status: 'open' },
  // Over the agent's 500 limit: a refund of more than 500 on it needs a manager's approval.
  'INV-654321': { amount: 840, status: 'paid' },
  'INV-111111': { amount: 45.5, status: 'refunded' },
};

/** Destinations the travel API serves, with the cheapest round trip and three hotels; others are 404. */
export const SAMPLE_DESTINATIONS: Readonly<Record<string, { flightFrom: number; hotels: [string, string, string] }>> = {
  lisbon: { flightFrom: 240, hotels: ['Harbor Inn', 'Alfama Suites', 'Tagus Lodge'] },
  paris: { flightFrom: 210, hotels: ['Hôtel des Arts', 'Seine View', 'Le Petit Marais'] },
  london: { flightFrom: 190, hotels: ['Thames House', 'Camden Rooms', 'Kensington Court'] },
  rome: { flightFrom: 260, hotels: ['Villa Aurelia', 'Trastevere Inn', 'Colosseo Suites'] },
  berlin: { flightFrom: 170, hotels: ['Spree Hotel', 'Mitte Lofts', 'Tiergarten Haus'] },
  barcelona: { flightFrom: 230, hotels: ['Casa Gràcia', 'Barceloneta Sol', 'Ramblas Central'] },
  tokyo: { flightFrom: 890, hotels: ['Shinjuku Tower', 'Asakusa Ryokan', 'Ginza Garden'] },
  'new york': { flightFrom: 420, hotels: ['Hudson Lofts', 'Park Avenue Inn', 'Brooklyn Bridge Hotel'] },
};

/** A national id starting with this letter fails the sample KYC check. */
export const SAMPLE_KYC_REJECT_PREFIX = 'X';

/**
 * The published hosts of examples/support-desk, and where each lives on the sample back-end:
 * `https://billing.example.com/v2` is served as `<back-end>/billing/v2`, and so on.
 */
export const SAMPLE_HOSTS = ['billing', 'travel', 'kyc', 'core'] as const;

/**
 * The sample project's files with every `https://<name>.example.com` URL of a SAMPLE_HOSTS name
 * pointing at the sample back-end instead. examples/ keeps the published URLs; the dev seed
 * imports this copy.
 */
export function pointAtSampleBackend(files: Record<string, string>, backendUrl: string): Record<string, string> {
  const origin = backendUrl.replace(/\/+$/, '');
  const published = new RegExp(`"https://(${SAMPLE_HOSTS.join('|')})\\.example\\.com(?=[/"])`, 'g');
  return Object.fromEntries(Object.entries(files).map(([file, content]) => [file, content.replace(published, (_, host: string) => `"${origin}/${host}`)]));
}

/**
 * Whether a tool file calls one of the sample hosts somewhere other than `backendUrl`: on its
 * published example.com URL (seeded before the sample back-end existed) or on another port.
 */
export function callsSampleHostElsewhere(content: string, backendUrl: string): boolean {
  const hosts = SAMPLE_HOSTS.join('|');
  const sampleUrls = content.match(new RegExp(`"(https://(${hosts})\\.example\\.com|http://127\\.0\\.0\\.1:\\d+/(${hosts}))(?=[/"])`, 'g')) ?? [];
  const origin = backendUrl.replace(/\/+$/, '');
  return sampleUrls.some((url) => !url.startsWith(`"${origin}/`));
}

/** `later`: work to do after answering (an async API's callback); the server cancels it on close. */
type Handler = (req: { params: string[]; query: URLSearchParams; body: Record<string, unknown>; later: (work: () => Promise<void>) => void }) => { status: number; body: unknown };

/** How long the sample KYC provider takes before it calls back. */
export const SAMPLE_KYC_DELAY_MS = 1500;

/**
 * Posts an async API's verdict to the callback URL it was given, signed as the platform expects:
 * `x-callback-signature: sha256=<HMAC-SHA256 of the body with the callback secret>`.
 */
async function callBack(url: string, secret: string, payload: unknown): Promise<void> {
  const body = JSON.stringify(payload);
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-callback-signature': signature }, body }).catch(() => undefined);
}

const notFound = (message: string) => ({ status: 404, body: { error: { code: 'NOT_FOUND', message } } });
const invalid = (message: string) => ({ status: 422, body: { error: { code: 'VALIDATION_ERROR', message } } });
const digest = (text: string) => createHash('sha256').update(text).digest('hex');
const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');

function destination(name: string): { key: string; label: string; entry: (typeof SAMPLE_DESTINATIONS)[string] } | null {
  const key = name.trim().toLowerCase();
  const entry = SAMPLE_DESTINATIONS[key];
  return entry ? { key, label: key.replace(/\b\w/g, (c) => c.toUpperCase()), entry } : null;
}

const ROUTES: { method: string; path: RegExp; handle: Handler }[] = [
  {
    method: 'GET',
    path: /^\/billing\/v2\/invoices\/([^/]+)$/,
    handle: ({ params: [id = ''] }) => {
      const invoice = SAMPLE_INVOICES[id];
      return invoice ? { status: 200, body: { id, ...invoice, currency: 'USD' } } : notFound(`No invoice ${id}`);
    },
  },
  {
    method: 'POST',
    path: /^\/billing\/v2\/invoices\/([^/]+)\/refunds$/,
    handle: ({ params: [id = ''], body }) => {
      const invoice = SAMPLE_INVOICES[id];
      if (!invoice) return notFound(`No invoice ${id}`);
      if (invoice.status === 'refunded') return { status: 409, body: { error: { code: 'CONFLICT', message: `${id} was already refunded` } } };
      const amount = typeof body.amount === 'number' ? body.amount : Number(body.amount);
      if (!Number.isFinite(amount) || amount <= 0 || amount > invoice.amount) return invalid(`amount must be more than 0 and at most ${invoice.amount}`);
      return { status: 201, body: { refund_id: `RF-${id.replace(/\D/g, '')}-${Math.round(amount * 100)}`, status: 'approved', amount } };
    },
  },
  {
    method: 'GET',
    path: /^\/travel\/v1\/flights$/,
    handle: ({ query }) => {
      const found = destination(query.get('destination') ?? '');
      if (!found) return notFound(`No flights to ${query.get('destination') ?? '(no destination)'}`);
      const [depart, back] = [query.get('depart'), query.get('return_date')];
      const dates = depart && back ? `, ${depart} to ${back}` : '';
      return { status: 200, body: { best_price: found.entry.flightFrom, summary: `Round trip to ${found.label}${dates} from $${found.entry.flightFrom}` } };
    },
  },
  {
    method: 'GET',
    path: /^\/travel\/v1\/hotels$/,
    handle: ({ query }) => {
      const found = destination(query.get('city') ?? '');
      if (!found) return notFound(`No hotels in ${query.get('city') ?? '(no city)'}`);
      const [a, b, c] = found.entry.hotels;
      return { status: 200, body: { summary: `${a}, ${b} and ${c} in ${found.label}` } };
    },
  },
  {
    method: 'POST',
    path: /^\/kyc\/v1\/checks$/,
    handle: ({ body, later }) => {
      const idNumber = text(body.id_number);
      if (!idNumber || !text(body.full_name)) return invalid('full_name and id_number are required');
      const decision = idNumber.toUpperCase().startsWith(SAMPLE_KYC_REJECT_PREFIX) ? 'rejected' : 'approved';
      const verdict = { decision, reference: `KYC-${digest(idNumber).slice(0, 8).toUpperCase()}` };
      // Called as an async tool: acknowledge now, deliver the verdict to the callback URL later.
      const notify = body.notify && typeof body.notify === 'object' ? (body.notify as Record<string, unknown>) : null;
      const url = text(notify?.url);
      const secret = text(notify?.callbackSecret);
      if (!url || !secret) return { status: 200, body: verdict };
      later(() => callBack(url, secret, verdict));
      return { status: 202, body: { status: 'accepted' } };
    },
  },
  {
    method: 'POST',
    path: /^\/core\/accounts$/,
    handle: ({ body }) => {
      const reference = text(body.kyc_reference);
      if (!reference.startsWith('KYC-')) return invalid('kyc_reference must be the reference of an approved KYC check');
      const number = BigInt(`0x${digest(reference).slice(0, 12)}`).toString().padStart(10, '0').slice(-10);
      return { status: 201, body: { account_number: `40${number}` } };
    },
  },
];

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 64 * 1024) return null;
    chunks.push(chunk);
  }
  if (size === 0) return {};
  try {
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Where the dev project's HTTP-async subscription delivers (docs/http-async.md), on the sample back-end. */
export const SAMPLE_RECEIVER_PATH = '/hooks/abl';
/** Callbacks the sample receiver keeps, newest last. */
const RECEIVER_KEEPS = 100;

export interface ReceivedCallback {
  event: string;
  receivedAt: string;
  body: Record<string, unknown>;
}

async function serve(req: IncomingMessage, res: ServerResponse, later: (work: () => Promise<void>) => void, inbox: ReceivedCallback[]): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://sample-backend');
  let answer: { status: number; body: unknown } = notFound(`No route ${req.method} ${url.pathname}`);
  const route = ROUTES.find((r) => r.path.test(url.pathname) && r.method === req.method);
  if (url.pathname === SAMPLE_RECEIVER_PATH && (req.method === 'POST' || req.method === 'GET')) {
    // The sample receiver: takes every callback (it does not check signatures; a real receiver
    // must, examples/http-async/receiver.ts) and shows the last ones on GET.
    if (req.method === 'POST') {
      const body = await readJson(req);
      if (body) {
        inbox.push({ event: String(req.headers['x-abl-event'] ?? body.event ?? 'unknown'), receivedAt: new Date().toISOString(), body });
        if (inbox.length > RECEIVER_KEEPS) inbox.shift();
      }
      answer = body ? { status: 200, body: { ok: true } } : { status: 400, body: { error: { code: 'BAD_REQUEST', message: 'body must be a JSON object' } } };
    } else {
      answer = { status: 200, body: { callbacks: inbox } };
    }
  } else if (route) {
    const body = await readJson(req);
    const params = (route.path.exec(url.pathname) ?? []).slice(1).map(decodeURIComponent);
    answer = body ? route.handle({ params, query: url.searchParams, body, later }) : { status: 400, body: { error: { code: 'BAD_REQUEST', message: 'body must be a JSON object' } } };
  }
  res.writeHead(answer.status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(answer.body));
}

export interface SampleBackend {
  /** e.g. `http://127.0.0.1:3010` */
  url: string;
  /** `127.0.0.1:3010`: what the tool destination rules must let through. */
  hostPort: string;
  /** What the sample receiver (`POST /hooks/abl`) took, newest last. */
  callbacks: ReceivedCallback[];
  close(): Promise<void>;
}

/** Starts the sample back-end on loopback; port 0 picks a free one. */
export async function startSampleBackend(port: number, host = '127.0.0.1', callbackDelayMs = SAMPLE_KYC_DELAY_MS): Promise<SampleBackend> {
  const timers = new Set<NodeJS.Timeout>();
  const later = (work: () => Promise<void>) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      void work();
    }, callbackDelayMs);
    timers.add(timer);
  };
  const callbacks: ReceivedCallback[] = [];
  const server: Server = createServer((req, res) => {
    serve(req, res, later, callbacks).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'INTERNAL', message: 'sample back-end error' } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  const hostPort = `${host}:${actual}`;
  return {
    url: `http://${hostPort}`,
    hostPort,
    callbacks,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `list` (comma-separated `host:port`, as the environment gives it) with `hostPort` added unless it is there. */
function withDestination(list: string | undefined, hostPort: string): string {
  const entries = (list ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  return (entries.includes(hostPort) ? entries : [...entries, hostPort]).join(',');
}

/**
 * What the tool runtime needs to reach the sample back-end and nothing else private: its
 * host:port added to the allowed private destinations `env` already lists (the developer's own
 * tool receivers stay allowed), never TOOL_ALLOW_PRIVATE_NETWORKS.
 */
export function sampleBackendToolEnv(backend: Pick<SampleBackend, 'hostPort'>, env: Record<string, string | undefined> = {}): Record<string, string> {
  return { TOOL_ALLOWED_PRIVATE_DESTINATIONS: withDestination(env.TOOL_ALLOWED_PRIVATE_DESTINATIONS, backend.hostPort) };
}

/** What HTTP-async deliveries need to reach the sample receiver: its host:port added to what `env` allows. */
export function sampleBackendHttpAsyncEnv(backend: Pick<SampleBackend, 'hostPort'>, env: Record<string, string | undefined> = {}): Record<string, string> {
  return { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: withDestination(env.HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS, backend.hostPort) };
}

// Shared setup of the outbound-call tests: the real API and worker against the Twilio fake, a
// project with a voice channel connection (inserted directly, its token sealed), scoped platform
// keys, and a front door for the provider's webhooks. The front door is the PUBLIC_BASE_URL the
// calls are placed with: it passes every webhook through to the API unchanged (same path and
// query, so Twilio's signatures still hold) except the `voice` webhook, which it answers itself
// with the TwiML the voice channel would give (a long <Pause> for a person, <Hangup/> for a
// machine under amd=disconnect), so the calls' status callbacks are what these tests are about.
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { startTwilioFake, type TwilioFake } from '../../../infra/twilio-fake';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client, type HttpResult, type RequestOptions } from '../../support/http';
import { createLogger } from '../../../lib/logger';
import { sealConnectionToken, newChannelConnectionId } from '../../../db/channel-connection';
import { secretMasterKeyRing } from '../../../lib/secret-envelope';
import { createScope } from '../../../core/platform-keys/scopes';
import { createApiKey } from '../../../core/tenancy/accounts';
import { twilioSignature } from '../../../providers/telephony/twilio-client';

export interface OutboundWorld {
  stack: TestStack;
  fake: TwilioFake;
  /** The PUBLIC_BASE_URL the provider calls back on. */
  publicUrl: string;
  tenant: SeededTenant;
  slug: string;
  connection: { id: string; accountSid: string; authToken: string };
  /** A key with both outbound scopes, one with read only, one bound to `staging`. */
  keys: { full: string; read: string; staging: string };
  /** Every response body the tests read through `api`, and every log line: scanned for numbers. */
  seen: string[];
  logLines: string[];
  api: ReturnType<typeof client>;
  base(env?: string, slug?: string): string;
  addConnection(options?: { projectId?: string; status?: 'active' | 'disabled'; environment?: string; amdMode?: 'off' | 'continue' | 'disconnect' }): Promise<{ id: string; accountSid: string; authToken: string }>;
  keyFor(projectId: string, grants: string[], environments?: string[]): Promise<string>;
  /** Posts a status callback signed as Twilio signs it (or with `signature` given). */
  postStatus(connectionId: string, outboundCallId: string, params: Record<string, string>, options?: { authToken?: string; signature?: string; ref?: string }): Promise<number>;
  close(): Promise<void>;
}

export async function startOutboundWorld(env: Record<string, string> = {}): Promise<OutboundWorld> {
  const fake = await startTwilioFake();
  let apiUrl = '';
  const front: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://front');
    if (/\/api\/telephony\/twilio\/[^/]+\/voice$/.test(url.pathname)) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const machine = (form.get('AnsweredBy') ?? '').startsWith('machine');
        const twiml = url.searchParams.get('amd') === 'disconnect' && machine ? '<Response><Hangup/></Response>' : '<Response><Pause length="120"/></Response>';
        res.writeHead(200, { 'content-type': 'text/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>${twiml}`);
      });
      return;
    }
    const target = new URL(req.url ?? '/', apiUrl);
    const forward = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (upstream) => {
      res.writeHead(upstream.statusCode ?? 502, upstream.headers);
      upstream.pipe(res);
    });
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const publicUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;

  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  const stack = await startTestStack({
    worker: true,
    logger: createLogger({ level: 'trace' }, sink),
    env: { TWILIO_API_BASE_URL: fake.url, PUBLIC_BASE_URL: publicUrl, OUTBOUND_SUBMIT_TIMEOUT_MS: '1500', OUTBOUND_RECONCILE_WINDOW_MS: '20000', ...env },
  });
  apiUrl = stack.baseUrl;
  const tenant = await seedTenant(stack.ctx);
  const project = await stack.ctx.models.Project.findById(tenant.projectId).lean();
  const ring = secretMasterKeyRing(stack.config)!;

  const addConnection: OutboundWorld['addConnection'] = async (options = {}) => {
    const id = newChannelConnectionId();
    const accountSid = 'AC' + randomBytes(16).toString('hex');
    const authToken = randomBytes(16).toString('hex');
    const projectId = options.projectId ?? tenant.projectId;
    const place = { _id: id, tenantId: tenant.tenantId, projectId };
    await stack.ctx.models.ChannelConnection.create({
      ...place,
      provider: 'twilio',
      name: `line ${id.slice(-4)}`,
      accountSid,
      authToken: await sealConnectionToken(stack.ctx.models.TenantDataKey, ring, place, authToken),
      callerNumber: '+15017122661',
      environment: options.environment ?? 'production',
      amdMode: options.amdMode ?? 'off',
      status: options.status ?? 'active',
    });
    return { id, accountSid, authToken };
  };
  const keyFor: OutboundWorld['keyFor'] = async (projectId, grants, environments) => {
    const p = await stack.ctx.models.Project.findById(projectId).lean();
    const scope = await createScope(stack.ctx.models, p!, { name: `s-${randomBytes(4).toString('hex')}`, permissions: Object.fromEntries(grants.map((g) => [g, 'YES' as const])) });
    return (await createApiKey(stack.ctx.models, tenant.tenantId, { name: 'outbound', scopeId: scope._id, ...(environments ? { environments } : {}) })).key;
  };
  const connection = await addConnection();
  const keys = {
    full: await keyFor(tenant.projectId, ['outbound_calls.initiate', 'outbound_calls.read']),
    read: await keyFor(tenant.projectId, ['outbound_calls.read']),
    staging: await keyFor(tenant.projectId, ['outbound_calls.initiate', 'outbound_calls.read'], ['staging']),
  };
  const seen: string[] = [];
  const raw = client(stack.baseUrl);
  const recorded =
    (fn: (path: string, o?: RequestOptions) => Promise<HttpResult>) =>
    async (path: string, o?: RequestOptions) => {
      const result = await fn(path, o);
      seen.push(result.text);
      return result;
    };
  const api = { get: recorded(raw.get), post: recorded(raw.post), put: recorded(raw.put), patch: recorded(raw.patch), delete: recorded(raw.delete) } as unknown as ReturnType<typeof client>;

  return {
    stack,
    fake,
    publicUrl,
    tenant,
    slug: project!.slug,
    connection,
    keys,
    seen,
    logLines,
    api,
    base: (env = 'production', slug = project!.slug) => `/api/v1/project/${slug}/${env}/outbound-calls`,
    addConnection,
    keyFor,
    async postStatus(connectionId, outboundCallId, params, options = {}) {
      const path = `/api/telephony/twilio/${connectionId}/status?outboundCallId=${encodeURIComponent(outboundCallId)}${options.ref ? `&ref=${options.ref}` : ''}`;
      const signature = options.signature ?? twilioSignature(options.authToken ?? connection.authToken, publicUrl + path, params);
      const res = await fetch(stack.baseUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
      });
      seen.push(await res.text());
      return res.status;
    },
    async close() {
      await stack.close();
      await fake.close();
      front.closeAllConnections();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    },
  };
}

/** Initiate body for a number. */
export function callTo(connectionId: string, number: string, extra: Record<string, unknown> = {}) {
  return { channelConnectionId: connectionId, to: { type: 'phone', number }, idempotencyKey: `k-${randomBytes(6).toString('hex')}`, ...extra };
}

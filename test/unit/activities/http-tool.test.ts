// HTTP tools: request building from the binding, SSRF refusal, and failure classification
// against a real local HTTP server.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { compileProject, type ToolIR } from '../../../abl';
import { isPublicAddress } from '../../../lib/net/destination';
import { buildHttpRequest, runHttpTool } from '../../../activities/tools/http-tool';

function toolFrom(source: string): ToolIR {
  const out = compileProject([{ path: 'agents/A.agent.abl', content: source }]);
  const tool = out.agents.A?.tools[0];
  if (!tool) throw new Error(JSON.stringify(out.diagnostics));
  return tool;
}

const agent = (endpoint: string, method = 'GET') => `AGENT: A
GOAL: "g"
TOOLS:
  get_invoice(invoice_id: string, expand: string = "none") -> object
    type: http
    endpoint: "${endpoint}"
    method: ${method}
    headers:
      X-Tenant: "acme"
`;

let server: Server;
let base: string;
const seen: { method?: string; url?: string; body: string; headers: Record<string, unknown> }[] = [];
let nextStatus = 200;
let nextBody = '{"id":"INV-1","amount":12}';

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, body, headers: req.headers });
      res.writeHead(nextStatus, { 'content-type': 'application/json' });
      res.end(nextBody);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

it('fills path placeholders and puts unused parameters in the query string for GET', () => {
  const tool = toolFrom(agent('https://billing.example.com/invoices/{invoice_id}'));
  if (tool.binding.type !== 'http') throw new Error('not http');
  const { url, init } = buildHttpRequest(tool.binding, { tool, args: { invoice_id: 'INV 1/2', expand: 'lines' }, timeoutMs: 1000, secrets: {} });
  expect(url.toString()).toBe('https://billing.example.com/invoices/INV%201%2F2?expand=lines');
  expect(init.method).toBe('GET');
  expect(new Headers(init.headers).get('x-tenant')).toBe('acme');
});

it('sends unused parameters as a JSON body for POST', async () => {
  const tool = toolFrom(agent(`${base}/invoices/{invoice_id}/refunds`, 'POST'));
  const result = await runHttpTool({ tool, args: { invoice_id: 'INV-9', expand: 'x' }, timeoutMs: 2000, secrets: {}, secretDestinations: {} }, { allowPrivate: true });
  expect(result).toEqual({ id: 'INV-1', amount: 12 });
  const last = seen[seen.length - 1]!;
  expect(last.method).toBe('POST');
  expect(last.url).toBe('/invoices/INV-9/refunds');
  expect(JSON.parse(last.body)).toEqual({ expand: 'x' });
});

it('sends a form tool\'s arguments form-encoded, and a template with its body type\'s Content-Type', () => {
  const form = toolFrom(`AGENT: A
GOAL: "g"
TOOLS:
  subscribe(email: string, tags: object) -> object
    type: http
    endpoint: "https://mail.example.com/subscribe"
    method: POST
    body_type: form
`);
  if (form.binding.type !== 'http') throw new Error('not http');
  const sent = buildHttpRequest(form.binding, { tool: form, args: { email: 'a+b@example.com', tags: { vip: true } }, timeoutMs: 1000, secrets: {} });
  expect(new Headers(sent.init.headers).get('content-type')).toBe('application/x-www-form-urlencoded');
  expect(Object.fromEntries(new URLSearchParams(sent.init.body as string))).toEqual({ email: 'a+b@example.com', tags: '{"vip":true}' });

  const xml = toolFrom(`AGENT: A
GOAL: "g"
TOOLS:
  ping(name: string) -> object
    type: http
    endpoint: "https://soap.example.com/ping"
    method: POST
    body_type: xml
    body_template: "<ping>{{name}}</ping>"
`);
  if (xml.binding.type !== 'http') throw new Error('not http');
  const soap = buildHttpRequest(xml.binding, { tool: xml, args: { name: 'x' }, timeoutMs: 1000, secrets: {} });
  expect(new Headers(soap.init.headers).get('content-type')).toBe('application/xml');
  expect(soap.init.body).toBe('<ping>x</ping>');
});

it('refuses loopback and private destinations unless allowed', async () => {
  const tool = toolFrom(agent(`${base}/x`));
  await expect(runHttpTool({ tool, args: { invoice_id: '1' }, timeoutMs: 1000, secrets: {}, secretDestinations: {} }, { allowPrivate: false })).rejects.toMatchObject({
    type: 'TOOL_BLOCKED',
    nonRetryable: true,
  });
  for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fd00::1', '::ffff:127.0.0.1']) {
    expect(isPublicAddress(ip)).toBe(false);
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700::1111']) expect(isPublicAddress(ip)).toBe(true);
});

it('classifies 4xx and redirects as final and 5xx as retryable', async () => {
  const tool = toolFrom(agent(`${base}/x/{invoice_id}`));
  nextStatus = 404;
  await expect(runHttpTool({ tool, args: { invoice_id: '1' }, timeoutMs: 1000, secrets: {}, secretDestinations: {} }, { allowPrivate: true })).rejects.toMatchObject({
    type: 'TOOL_HTTP_4XX',
    nonRetryable: true,
  });
  nextStatus = 503;
  await expect(runHttpTool({ tool, args: { invoice_id: '1' }, timeoutMs: 1000, secrets: {}, secretDestinations: {} }, { allowPrivate: true })).rejects.toMatchObject({
    type: 'TOOL_HTTP_5XX',
    nonRetryable: false,
  });
  nextStatus = 302;
  await expect(runHttpTool({ tool, args: { invoice_id: '1' }, timeoutMs: 1000, secrets: {}, secretDestinations: {} }, { allowPrivate: true })).rejects.toMatchObject({
    type: 'TOOL_REDIRECT',
    nonRetryable: true,
  });
  nextStatus = 200;
  nextBody = '';
  await expect(runHttpTool({ tool, args: { invoice_id: '1' }, timeoutMs: 1000, secrets: {}, secretDestinations: {} }, { allowPrivate: true })).rejects.toMatchObject({
    type: 'TOOL_EMPTY_RESULT',
  });
  nextBody = '{"ok":true}';
});

// HTTP tools and the destination rules: refusals are final TOOL_BLOCKED errors, the allowlist is
// exact, and a redirect from an allowed server into a private one is never followed.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { compileProject, type ToolIR } from '../../../abl';
import { runHttpTool } from '../../../activities/tools/http-tool';
import { type Resolve } from '../../../lib/net/destination';

function toolFor(endpoint: string): ToolIR {
  const source = `AGENT: A
GOAL: "g"
TOOLS:
  lookup(id: string) -> object
    type: http
    endpoint: "${endpoint}"
    method: GET
`;
  const tool = compileProject([{ path: 'agents/A.agent.abl', content: source }]).agents.A?.tools[0];
  if (!tool) throw new Error('no tool');
  return tool;
}

const run = (endpoint: string, options: Parameters<typeof runHttpTool>[1]) =>
  runHttpTool({ tool: toolFor(endpoint), args: { id: '1' }, timeoutMs: 2000, secrets: {}, secretDestinations: {} }, options);

let internal: Server;
let allowed: Server;
let internalBase: string;
let allowedBase: string;
const internalHits: string[] = [];

beforeAll(async () => {
  internal = createServer((req, res) => {
    internalHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"secret":true}');
  });
  allowed = createServer((req, res) => {
    if (req.url?.startsWith('/hop')) {
      res.writeHead(302, { location: `${internalBase}/after-redirect` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  await Promise.all([internal, allowed].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  internalBase = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  allowedBase = `http://127.0.0.1:${(allowed.address() as AddressInfo).port}`;
});
beforeEach(() => (internalHits.length = 0));
afterAll(async () => {
  await Promise.all([internal, allowed].map((s) => new Promise((r) => s.close(r))));
});

it('refuses the IPv6 spelling of the metadata address without sending anything', async () => {
  await expect(run('http://[::ffff:169.254.169.254]/latest/meta-data/{id}', { allowPrivate: false })).rejects.toMatchObject({
    type: 'TOOL_BLOCKED',
    nonRetryable: true,
    message: expect.stringContaining('non-public addresses are refused'),
  });
});

it('refuses private literals and names that resolve to them; the server receives nothing', async () => {
  const port = new URL(internalBase).port;
  const toLoopback: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
  for (const endpoint of [`${internalBase}/a/{id}`, `http://[::ffff:127.0.0.1]:${port}/b/{id}`, `http://tools.example:${port}/c/{id}`]) {
    await expect(run(endpoint, { allowPrivate: false, resolve: toLoopback })).rejects.toMatchObject({ type: 'TOOL_BLOCKED', nonRetryable: true });
  }
  expect(internalHits).toEqual([]);
});

it('reaches an allowlisted host:port, and only that one', async () => {
  const options = { allowPrivate: false, allowedPrivateDestinations: [new URL(allowedBase).host] };
  await expect(run(`${allowedBase}/ok/{id}`, options)).resolves.toEqual({ ok: true });
  await expect(run(`${internalBase}/x/{id}`, options)).rejects.toMatchObject({ type: 'TOOL_BLOCKED' });
  expect(internalHits).toEqual([]);
});

it('does not follow a redirect from an allowed server into a private one', async () => {
  const options = { allowPrivate: false, allowedPrivateDestinations: [new URL(allowedBase).host] };
  await expect(run(`${allowedBase}/hop/{id}`, options)).rejects.toMatchObject({ type: 'TOOL_REDIRECT', nonRetryable: true });
  expect(internalHits).toEqual([]);
});

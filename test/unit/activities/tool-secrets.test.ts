// {{secrets.NAME}} in HTTP tools: which names a tool references (headers, auth_config, body,
// endpoint), how auth and auth_config become headers, and scrubbing of resolved values.
import { ApplicationFailure } from '@temporalio/common';
import { compileProject, type ToolIR } from '../../../abl';
import { buildHttpRequest } from '../../../activities/tools/http-tool';
import { scrubFailure, scrubSecrets, secretReferences, secretsForCall } from '../../../activities/tools/tool-secrets';
import { ToolSecretUnavailableError } from '../../../db/tool-secret';

function toolFrom(tools: string): ToolIR {
  const out = compileProject([{ path: 'agents/A.agent.abl', content: `AGENT: A\nGOAL: "g"\nTOOLS:\n${tools}` }]);
  const tool = out.agents.A?.tools[0];
  if (!tool) throw new Error(JSON.stringify(out.diagnostics));
  return tool;
}

const bearer = toolFrom(`  create_ticket(subject: string) -> object
    type: http
    endpoint: "https://api.example.com/tickets?team={{secrets.TEAM}}"
    method: POST
    auth: bearer
    auth_config:
      token: "{{secrets.API_TOKEN}}"
      custom_headers:
        X-Org: "{{ secrets['ORG_ID'] }}"
    headers:
      X-Signature: "{{secrets.SIGNING_KEY}}"
    body_template: '{"subject": "{{subject}}", "pin": "{{secrets.PIN}}"}'
`);

const apiKey = toolFrom(`  lookup(q: string) -> object
    type: http
    endpoint: "https://api.example.com/lookup"
    auth: api_key
    auth_config:
      header_name: X-Key
      api_key: "{{secrets.LOOKUP_KEY}}"
    headers:
      X-Plain: "no secret here {{q}}"
`);

describe('secretReferences', () => {
  it('finds every name a tool references, in its endpoint, auth_config, headers and body, once each', () => {
    expect(secretReferences(bearer).sort()).toEqual(['API_TOKEN', 'ORG_ID', 'PIN', 'SIGNING_KEY', 'TEAM']);
    expect(secretReferences(apiKey)).toEqual(['LOOKUP_KEY']);
  });

  it('finds none in a tool without placeholders', () => {
    expect(secretReferences(toolFrom(`  ping() -> object\n    type: http\n    endpoint: "https://x.example.com/{{secretsX}}"\n`))).toEqual([]);
  });
});

describe('auth and auth_config', () => {
  const secrets = { API_TOKEN: 'tok-123456', ORG_ID: 'org-9', SIGNING_KEY: 'sig-abc', PIN: '4242', TEAM: 'blue', LOOKUP_KEY: 'lk-777777' };

  it('sends a bearer token and custom headers from auth_config, with secrets filled in', () => {
    const { url, init } = buildHttpRequest(bearer.binding as never, { tool: bearer, args: { subject: 'Hi' }, timeoutMs: 1000, secrets });
    const headers = init.headers as Headers;
    expect(headers.get('authorization')).toBe('Bearer tok-123456');
    expect(headers.get('x-org')).toBe('org-9');
    expect(headers.get('x-signature')).toBe('sig-abc');
    expect(JSON.parse(init.body as string)).toEqual({ subject: 'Hi', pin: '4242' });
    expect(url.searchParams.get('team')).toBe('blue');
  });

  it('sends an api_key under the configured header name; a header the tool sets itself wins', () => {
    const { init } = buildHttpRequest(apiKey.binding as never, { tool: apiKey, args: { q: 'a' }, timeoutMs: 1000, secrets });
    expect((init.headers as Headers).get('x-key')).toBe('lk-777777');
    const own = toolFrom(`  t() -> object\n    type: http\n    endpoint: "https://x.example.com"\n    auth: bearer\n    auth_config:\n      token: "{{secrets.A}}"\n    headers:\n      Authorization: "Token mine"\n`);
    const built = buildHttpRequest(own.binding as never, { tool: own, args: {}, timeoutMs: 1000, secrets: { A: 'zzzz' } });
    expect((built.init.headers as Headers).get('authorization')).toBe('Token mine');
  });
});

describe('scrubbing', () => {
  const secrets = { TOKEN: 's3cr3t/value', SHORT: 'ab' };

  it('replaces resolved values, raw or URL-encoded, anywhere in a result, but not values too short to scrub safely', () => {
    const result = { echo: 'Bearer s3cr3t/value', nested: [{ url: 'https://x/?t=s3cr3t%2Fvalue' }], s3cr3t_value: 'ab cd' };
    expect(scrubSecrets(result, secrets)).toEqual({ echo: 'Bearer [secret]', nested: [{ url: 'https://x/?t=[secret]' }], s3cr3t_value: 'ab cd' });
  });

  it('replaces values as a JSON string or a form field escapes them', () => {
    const odd = { TOKEN: 'p@ss "wörd"\\x' };
    const body = JSON.stringify({ error: 'bad token', token: odd.TOKEN });
    const ascii = body.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const form = new URLSearchParams({ token: odd.TOKEN }).toString();
    expect(scrubSecrets({ body, ascii, form }, odd)).toEqual({
      body: '{"error":"bad token","token":"[secret]"}',
      ascii: '{"error":"bad token","token":"[secret]"}',
      form: 'token=[secret]',
    });
  });

  it('keeps a failure type and retryability while scrubbing its message and details', () => {
    const failure = ApplicationFailure.nonRetryable('Tool t answered HTTP 401', 'TOOL_HTTP_4XX', { status: 401, body: 'bad token s3cr3t/value' });
    const scrubbed = scrubFailure(failure, secrets) as ApplicationFailure;
    expect(scrubbed).toBeInstanceOf(ApplicationFailure);
    expect(scrubbed.type).toBe('TOOL_HTTP_4XX');
    expect(scrubbed.nonRetryable).toBe(true);
    expect(scrubbed.details).toEqual([{ status: 401, body: 'bad token [secret]' }]);
    expect(String((scrubFailure(new Error('connect to s3cr3t/value failed'), secrets) as Error).message)).toBe('connect to [secret] failed');
  });
});

describe('secretsForCall', () => {
  it('asks only for the referenced names, in the dev environment unless one is given', async () => {
    const asked: unknown[] = [];
    const resolve = async (q: unknown) => (asked.push(q), { LOOKUP_KEY: { id: 's1', value: 'v', allowedHosts: ['x.example.com'] } });
    await secretsForCall(resolve, { tenantId: 't', projectId: 'p', tool: apiKey });
    await secretsForCall(resolve, { tenantId: 't', projectId: 'p', tool: apiKey, environment: 'production' });
    expect(asked).toEqual([
      { tenantId: 't', projectId: 'p', toolName: 'lookup', environment: 'dev', names: ['LOOKUP_KEY'] },
      { tenantId: 't', projectId: 'p', toolName: 'lookup', environment: 'production', names: ['LOOKUP_KEY'] },
    ]);
    const plain = toolFrom(`  ping() -> object\n    type: http\n    endpoint: "https://x.example.com"\n`);
    expect(await secretsForCall(() => Promise.reject(new Error('not called')), { tenantId: 't', projectId: 'p', tool: plain })).toEqual({ values: {}, destinations: {} });
  });

  it('turns an unavailable secret into a final TOOL_SECRET_UNAVAILABLE failure naming it', async () => {
    const resolve = () => Promise.reject(new ToolSecretUnavailableError('LOOKUP_KEY', 'expired', 'secret "LOOKUP_KEY" expired'));
    const err = (await secretsForCall(resolve, { tenantId: 't', projectId: 'p', tool: apiKey }).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'TOOL_SECRET_UNAVAILABLE', nonRetryable: true, message: 'Tool lookup: secret "LOOKUP_KEY" expired' });
  });
});

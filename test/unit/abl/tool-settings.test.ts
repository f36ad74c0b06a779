// Tool settings the compiler reads into the IR the runtime acts on: retry / retry_delay /
// retry_policy (and the waits they give), circuit_breaker's two spellings, auth: oauth2 mapped to
// the OAuth2 kind its auth_config describes, and the SecretRef vault's RESULT_SECRETS and
// SECRET_ACCESS, with the result a producer returns once its secrets are taken out.
import { compileProject, type ToolIR } from '../../../abl';
import { toolRetryDelayMs, toolRetryPlan } from '../../../abl/tool-retry';
import { takeResultSecrets, vaultKeysOf } from '../../../activities/tools/result-secrets';

function tools(block: string): { tools: ToolIR[]; codes: string[] } {
  const out = compileProject([{ path: 'agents/A.agent.abl', content: `AGENT: A\nGOAL: "g"\nTOOLS:\n${block}` }]);
  return { tools: out.agents.A?.tools ?? [], codes: out.diagnostics.map((d) => d.code) };
}
const http = (extra: string) => `  t() -> object\n    type: http\n    endpoint: "https://x.example.com/t"\n${extra}`;

describe('retry settings', () => {
  it('retry alone: retry + 1 attempts, retry_delay before each retry', () => {
    const { tools: [t], codes } = tools(http('    retry: 2\n    retry_delay: 250ms\n'));
    expect(codes).toEqual([]);
    const plan = toolRetryPlan(t!);
    expect(plan.attempts).toBe(3);
    expect([1, 2].map((r) => toolRetryDelayMs(plan.policy, r, 0.9))).toEqual([250, 250]);
  });

  it('an async tool warns for the per-call settings it does not read, and keeps retry', () => {
    const { codes } = tools(http('    async: true\n    retry: 2\n    rate_limit: 5\n    circuit_breaker: {threshold: 3, reset_ms: 1000}\n'));
    expect(codes).toEqual(['W214', 'W214']);
  });

  it('retry 0 (the default) is one attempt', () => {
    expect(toolRetryPlan(tools(http('')).tools[0]!).attempts).toBe(1);
  });

  it('retry_policy: its strategy, cap, max_retries and jitter', () => {
    const { tools: [t], codes } = tools(http('    retry: 5\n    retry_policy:\n      strategy: exponential\n      initial_delay_ms: 100\n      multiplier: 3\n      max_delay_ms: 1000\n      max_retries: 4\n      jitter: 0.5\n'));
    expect(codes).toEqual([]);
    const plan = toolRetryPlan(t!);
    expect(plan.attempts).toBe(5);
    // 100, 300, 900, then capped at 1000; jitter 0.5 draws from [delay/2, delay].
    expect([1, 2, 3, 4].map((r) => toolRetryDelayMs(plan.policy, r, 0))).toEqual([100, 300, 900, 1000]);
    expect(toolRetryDelayMs(plan.policy, 2, 0.999)).toBeGreaterThanOrEqual(150);
    expect(toolRetryDelayMs(plan.policy, 2, 0.999)).toBeLessThan(300);
    const linear = toolRetryPlan(tools(http('    retry_policy:\n      strategy: linear\n      initial_delay_ms: 200\n      max_retries: 3\n')).tools[0]!);
    expect([1, 2, 3].map((r) => toolRetryDelayMs(linear.policy, r, 0))).toEqual([200, 400, 600]);
  });

  it('a library default retry_policy and rate_limit reach its tools without a warning', () => {
    const out = compileProject([
      { path: 'agents/A.agent.abl', content: 'AGENT: A\nGOAL: "g"\nTOOLS:\n  FROM "../tools/lib.tools.abl" USE: t\n' },
      { path: 'tools/lib.tools.abl', content: 'TOOLS:\n  rate_limit: 3\n  retry_policy:\n    strategy: fixed\n    initial_delay_ms: 50\n    max_retries: 2\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n' },
    ]);
    expect(out.diagnostics).toEqual([]);
    const t = out.agents.A!.tools[0]!;
    expect(t.binding).toMatchObject({ rate_limit: 3, retry: 2, retry_policy: { strategy: 'fixed', initial_delay_ms: 50 } });
  });

  it('circuit_breaker takes reset_ms and resetMs; a rate of 0 is an error', () => {
    expect(tools(http('    circuit_breaker:\n      threshold: 3\n      resetMs: 5s\n')).tools[0]!.binding).toMatchObject({ circuit_breaker: { threshold: 3, reset_ms: 5000 } });
    expect(tools(http('    circuit_breaker:\n      reset_ms: 100\n')).tools[0]!.binding).toMatchObject({ circuit_breaker: { threshold: 5, reset_ms: 100 } });
    expect(tools(http('    rate_limit: 0\n')).codes).toEqual(['E214']);
  });

  it('on a tool that is not http they are not read (W214), never silently', () => {
    const { codes } = tools('  s() -> object\n    type: sandbox\n    runtime: javascript\n    code: "return 1"\n    retry: 2\n    rate_limit: 1\n');
    expect(codes).toEqual(['W214', 'W214']);
  });
});

describe('auth', () => {
  it('oauth2 is oauth2_client with a token_url, oauth2_user with an access_token', () => {
    const client = tools(http('    auth: oauth2\n    auth_config:\n      token_url: "https://idp.example.com/token"\n      client_id: "c"\n      client_secret: "{{secrets.S}}"\n'));
    expect(client.codes).toEqual([]);
    expect(client.tools[0]!.binding).toMatchObject({ auth: 'oauth2_client' });
    const user = tools(http('    auth: oauth2\n    auth_config:\n      access_token: "{{secrets.USER_TOKEN}}"\n'));
    expect(user.tools[0]!.binding).toMatchObject({ auth: 'oauth2_user' });
    // grant_type says it outright; a client-credentials grant still needs its three values (E418).
    expect(tools(http('    auth: oauth2\n    auth_config:\n      grant_type: client_credentials\n')).codes).toEqual(['E418']);
  });

  it('custom with headers of its own is the credential it writes: no diagnostic', () => {
    expect(tools(http('    auth: custom\n    headers:\n      X-Signature: "{{secrets.SIG}}"\n')).codes).toEqual([]);
    expect(tools(http('    auth: custom\n    auth_config:\n      custom_headers:\n        X-Key: "{{secrets.K}}"\n')).codes).toEqual([]);
  });
});

describe('secret vault', () => {
  const producer = http('    RESULT_SECRETS:\n      - data.token -> tok (consumers: [use_it], ttl: 5m, single_use: true)\n      - items[0].id -> first_id\n');
  const consumer = '  use_it() -> object\n    type: http\n    endpoint: "https://x.example.com/u"\n    SECRET_ACCESS:\n      READ: [tok]\n    headers:\n      Authorization: "Bearer {{_secret.tok}}"\n    body_template: "{\\"id\\": \\"{{_secret.first_id}}\\"}"\n    scrub_secrets: false\n';

  it('reads RESULT_SECRETS and SECRET_ACCESS; a placeholder for a key not listed is E445', () => {
    const { tools: [p, c], codes } = tools(producer + consumer);
    expect(codes).toEqual(['E445']);
    expect(p!.result_secrets).toEqual([
      { path: 'data.token', key: 'tok', consumers: ['use_it'], ttl_s: 300, single_use: true },
      { path: 'items[0].id', key: 'first_id', consumers: [], ttl_s: null, single_use: false },
    ]);
    expect(c!.secret_access).toEqual(['tok']);
    expect(c!.scrub_secrets).toBe(false);
    // Only keys its SECRET_ACCESS lists are ever read for it.
    expect(vaultKeysOf(c!)).toEqual(['tok']);
  });

  it("takes the secrets out of the producer's result, and any copy of them", () => {
    const p = tools(producer).tools[0]!;
    const taken = takeResultSecrets(p, { data: { token: 'tk-123456', note: 'your token is tk-123456' }, items: [{ id: 42 }] });
    expect(taken.result).toEqual({ data: { token: '[secret]', note: 'your token is [secret]' }, items: [{ id: '[secret]' }] });
    expect(taken.entries.map((e) => [e.key, e.value, e.singleUse])).toEqual([['tok', 'tk-123456', true], ['first_id', '42', false]]);
    // A path the result lacks stores nothing.
    expect(takeResultSecrets(p, { other: 1 }).entries).toEqual([]);
  });
});

// The headers an HTTP tool's auth adds: an oauth2_user tool sends its user's access token, and
// fails as not authorised while it has none.
import { ApplicationFailure } from '@temporalio/common';
import { authHeaders } from '../../../activities/tools/http-auth';
import { type ToolIR } from '../../../abl/ir';

type HttpBinding = Extract<ToolIR['binding'], { type: 'http' }>;

const binding = (auth: HttpBinding['auth'], auth_config: HttpBinding['auth_config']): HttpBinding => ({
  type: 'http',
  endpoint: 'https://api.example.com/x',
  method: 'GET',
  auth,
  auth_config,
  headers: {},
  query_params: {},
  body_template: null,
  body_type: 'json',
  retry: 0,
  retry_delay_ms: 1000,
  rate_limit: null,
  circuit_breaker: null,
  async: null,
});
const render = (values: Record<string, string>) => (template: string) => template.replace(/\{\{secrets\.(\w+)\}\}/g, (_m, name: string) => values[name] ?? '');

describe('oauth2_user', () => {
  it('sends the rendered access token as a bearer token', () => {
    expect(authHeaders(binding('oauth2_user', { access_token: '{{secrets.TOKEN}}' }), render({ TOKEN: 'abc123' }))).toEqual({ authorization: 'Bearer abc123' });
  });

  it.each([
    ['no access_token at all', {}],
    ['a token that renders empty', { access_token: '{{secrets.TOKEN}}' }],
  ])('fails as TOOL_NOT_AUTHORIZED, not retryable, with %s', (_name, config) => {
    let failure: unknown;
    try {
      authHeaders(binding('oauth2_user', config), render({}));
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'TOOL_NOT_AUTHORIZED', nonRetryable: true });
  });

  it('sends an oauth2_client tool its exchanged token and refuses one without, and leaves bearer as it was', () => {
    expect(() => authHeaders(binding('oauth2_client', { access_token: 'x' }), render({}))).toThrow(/no access token from the client-credentials exchange/);
    expect(authHeaders(binding('oauth2_client', {}), render({}), 'exchanged-token')).toEqual({ authorization: 'Bearer exchanged-token' });
    expect(authHeaders(binding('bearer', { token: 't' }), render({}))).toEqual({ authorization: 'Bearer t' });
  });
});

// Headers an HTTP tool's `auth` and `auth_config` add to its request, rendered like any other
// template (so {{secrets.NAME}} works there). A header the tool sets itself in `headers` wins.
// `oauth2_client` sends the token of the client-credentials exchange (activities/tools/oauth2-client.ts).
import { ApplicationFailure } from '@temporalio/activity';
import { type Json, type ToolIR } from '../../abl/ir';

type HttpBinding = Extract<ToolIR['binding'], { type: 'http' }>;

const text = (value: Json | undefined): string | null => (typeof value === 'string' && value !== '' ? value : null);

/**
 * `oauth2_client`: `Authorization: Bearer <accessToken>` (the exchange's token; none is an error);
 * `bearer`: `Authorization: Bearer <auth_config.token>`; `oauth2_user`: the same with
 * `auth_config.access_token`, and a TOOL_NOT_AUTHORIZED failure while it is empty; `api_key`: `<header_name, default
 * X-API-Key>: <auth_config.api_key>`; every scheme: `auth_config.custom_headers` as they are.
 */
export function authHeaders(binding: HttpBinding, render: (template: string) => string, accessToken?: string): Record<string, string> {
  const config = binding.auth_config;
  const headers: Record<string, string> = {};
  const custom = config.custom_headers;
  if (custom && typeof custom === 'object' && !Array.isArray(custom)) {
    for (const [name, value] of Object.entries(custom)) if (text(value)) headers[name] = render(text(value)!);
  }
  if (binding.auth === 'bearer') {
    const token = text(config.token) ?? text(config.access_token);
    if (token) headers.authorization = `Bearer ${render(token)}`;
  } else if (binding.auth === 'oauth2_user') {
    // Authorised once the user's access token is there (docs/agentic-app-sessions.md "OAuth tools").
    const template = text(config.access_token) ?? text(config.token);
    const token = template ? render(template).trim() : '';
    if (!token) throw ApplicationFailure.nonRetryable('This tool needs OAuth authorisation: no access token is stored for it yet', 'TOOL_NOT_AUTHORIZED');
    headers.authorization = `Bearer ${token}`;
  } else if (binding.auth === 'oauth2_client') {
    // Never called without the credential its author asked for.
    if (!accessToken) throw ApplicationFailure.nonRetryable('This oauth2_client tool has no access token from the client-credentials exchange', 'TOOL_AUTH_FAILED');
    headers.authorization = `Bearer ${accessToken}`;
  } else if (binding.auth === 'api_key') {
    const key = text(config.api_key) ?? text(config.key) ?? text(config.value);
    if (key) headers[text(config.header_name) ?? 'X-API-Key'] = render(key);
  }
  return headers;
}

// The rules on a subscription's callback URL that no schema states: https only in production, the
// destination rules (with the HTTP-async allow-list, not the tools' one), and URLs the parser refuses.
import { checkCallbackUrl } from '../../../core/http-async/subscriptions';
import { type AppContext } from '../../../api/context';
import { isDomainError } from '../../../lib/errors';

const ctx = (NODE_ENV: string, allowed: string[] = []) =>
  ({ config: { NODE_ENV, HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: allowed, TOOL_ALLOWED_PRIVATE_DESTINATIONS: ['10.0.0.5:443'] } }) as unknown as AppContext;

async function refusal(c: AppContext, url: string): Promise<[string, string] | null> {
  try {
    await checkCallbackUrl(c, url);
    return null;
  } catch (err) {
    if (!isDomainError(err)) throw err;
    return [err.code, err.message];
  }
}

it('takes http outside production, and only https in production', async () => {
  expect(await refusal(ctx('development'), 'http://93.184.216.34/hook')).toBeNull();
  expect(await refusal(ctx('production'), 'http://93.184.216.34/hook')).toEqual(['UNPROCESSABLE_ENTITY', 'body.callbackUrl: must use https://']);
  expect(await refusal(ctx('production'), 'https://93.184.216.34/hook')).toBeNull();
  // Even an allowed private receiver needs https in production.
  expect(await refusal(ctx('production', ['10.0.0.9:80']), 'http://10.0.0.9/hook')).toEqual(['UNPROCESSABLE_ENTITY', 'body.callbackUrl: must use https://']);
});

it('refuses private destinations unless HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS lists them; the tools list does not count', async () => {
  expect((await refusal(ctx('production'), 'https://10.0.0.5/hook'))?.[1]).toMatch(/^body\.callbackUrl: private, loopback/);
  expect(await refusal(ctx('production', ['10.0.0.5:443']), 'https://10.0.0.5/hook')).toBeNull();
});

it('stores the URL as the parser spells it', async () => {
  expect(await checkCallbackUrl(ctx('test'), 'HTTPS://93.184.216.34:443/a/../hook?x=1')).toBe('https://93.184.216.34/hook?x=1');
});

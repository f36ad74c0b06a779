// The write-time check of destinations the platform calls (HTTP-async callback URLs): literals,
// then every address the name resolves to; the allow-list exempts a host:port; no address is refused.
import { assertDestinationResolved, BlockedDestinationError, UnresolvableDestinationError, type DestinationPolicy, type Resolve } from '../../../lib/net/destination';

const resolver = (table: Record<string, string[]>): Resolve => async (host) => {
  const addresses = table[host];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const policy = (extra: Partial<DestinationPolicy> = {}): DestinationPolicy => ({
  allowPrivateNetworks: false,
  allowedPrivateDestinations: [],
  resolve: resolver({
    'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'rebind.example.com': ['93.184.216.34', '10.0.0.7'],
    'meta.example.com': ['::ffff:169.254.169.254'],
    'empty.example.com': [],
    'internal.corp': ['10.1.2.3'],
  }),
  ...extra,
});

const check = (url: string, p = policy()) => assertDestinationResolved(new URL(url), p);

it('accepts a name whose every address is public, and a public literal', async () => {
  await expect(check('https://hooks.example.com/abl')).resolves.toBeUndefined();
  await expect(check('https://93.184.216.34/abl')).resolves.toBeUndefined();
});

it.each([
  ['a name with one private address among public ones', 'https://rebind.example.com/', 'private'],
  ['a name resolving to an IPv6 spelling of the metadata address', 'https://meta.example.com/', 'ipv4Mapped:linkLocal'],
  ['a private literal', 'http://10.0.0.1/', 'private'],
  ['localhost, before any resolution', 'http://localhost:3000/', 'loopback'],
])('refuses %s', async (_label, url, range) => {
  const err = await check(url).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(BlockedDestinationError);
  expect((err as BlockedDestinationError).range).toBe(range);
});

it('refuses a name without addresses or that does not resolve', async () => {
  await expect(check('https://empty.example.com/')).rejects.toBeInstanceOf(UnresolvableDestinationError);
  await expect(check('https://nowhere.example.com/')).rejects.toBeInstanceOf(UnresolvableDestinationError);
});

it('lets the allow-list exempt exactly its host:port, without resolving it', async () => {
  const allowed = policy({ allowedPrivateDestinations: ['internal.corp:8443', '127.0.0.1:4010'] });
  await expect(check('https://internal.corp:8443/hook', allowed)).resolves.toBeUndefined();
  await expect(check('http://127.0.0.1:4010/hook', allowed)).resolves.toBeUndefined();
  await expect(check('https://internal.corp/hook', allowed)).rejects.toBeInstanceOf(BlockedDestinationError);
  await expect(check('http://127.0.0.1:4011/hook', allowed)).rejects.toBeInstanceOf(BlockedDestinationError);
});

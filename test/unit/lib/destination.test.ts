// Destination rules: which addresses count as public (every IPv4 and IPv6 special-purpose range,
// IPv6 spellings of IPv4 judged by the IPv4 they carry), the allowlist's canonical form, the
// write-time literal check, and a guarded fetch against real local servers.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import {
  assertDestinationLiteral,
  blockedDestinationOf,
  classifyAddress,
  createDestinationGuard,
  parseDestinationList,
  type DestinationPolicy,
  type Resolve,
} from '../../../lib/net/destination';

const NOT_PUBLIC: Array<[string, string]> = [
  // The example: an IPv6 spelling of the cloud metadata address.
  ['::ffff:169.254.169.254', 'ipv4Mapped:linkLocal'],
  ['::ffff:a9fe:a9fe', 'ipv4Mapped:linkLocal'],
  ['169.254.169.254', 'linkLocal'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.1.2.3', 'private'],
  ['100.64.0.1', 'carrierGradeNat'],
  ['100.127.255.254', 'carrierGradeNat'],
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'documentation'],
  ['192.88.99.1', 'reserved'],
  ['192.168.1.1', 'private'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.200', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['fc00::1', 'uniqueLocal'],
  ['fd12:3456::1', 'uniqueLocal'],
  ['fe80::1', 'linkLocal'],
  ['fec0::1', 'siteLocal'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['100::1', 'discard'],
  ['2001:2::1', 'benchmarking'],
  ['4000::1', 'reserved'],
  ['::ffff:127.0.0.1', 'ipv4Mapped:loopback'],
  ['::ffff:10.0.0.1', 'ipv4Mapped:private'],
  ['::ffff:0:a9fe:a9fe', 'ipv4Translated:linkLocal'],
  ['::127.0.0.1', 'ipv4Compatible:loopback'],
  ['::a9fe:a9fe', 'ipv4Compatible:linkLocal'],
  ['64:ff9b::169.254.169.254', 'nat64:linkLocal'],
  ['64:ff9b::7f00:1', 'nat64:loopback'],
  ['64:ff9b:1::a9fe:a9fe', 'nat64Local'],
  ['2002:a9fe:a9fe::1', '6to4:linkLocal'],
  ['2002:7f00:1::', '6to4:loopback'],
  // Teredo: server 65.54.227.120 in clear, client 127.0.0.1 with every bit inverted.
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'teredo:loopback'],
  // Teredo with a private server address.
  ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'teredo:private'],
  ['not-an-address', 'invalid'],
];

const PUBLIC = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '100.63.255.255', '172.32.0.1', '198.20.0.1', '2606:4700::1111', '2a00:1450:4001::200e',
  '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'];

it.each(NOT_PUBLIC)('%s is not public (%s)', (ip, range) => {
  expect(classifyAddress(ip)).toEqual({ public: false, range });
});

it.each(PUBLIC)('%s is public', (ip) => {
  expect(classifyAddress(ip)).toEqual({ public: true });
});

it('parses allowlists into the host:port form a URL spells', () => {
  expect(parseDestinationList(' 127.0.0.1:4010 ,LOCALHOST:80,[::1]:9000,[0:0::ffff:7f00:1]:1,')).toEqual([
    '127.0.0.1:4010',
    'localhost:80',
    '[::1]:9000',
    '[::ffff:7f00:1]:1',
  ]);
  for (const bad of ['127.0.0.1', ':80', 'a:b', 'a:1:2', 'https://a:443', 'user@a:80', 'a:65536']) {
    expect(() => parseDestinationList(bad)).toThrow(/is not host:port/);
  }
});

describe('the write-time check', () => {
  const policy: DestinationPolicy = { allowPrivateNetworks: false, allowedPrivateDestinations: ['127.0.0.1:4010', '[::1]:80'] };
  const refused = (url: string) => {
    try {
      assertDestinationLiteral(new URL(url), policy);
      return null;
    } catch (err) {
      return blockedDestinationOf(err)?.range ?? 'other error';
    }
  };

  it('refuses private literals and localhost, leaves names to the call', () => {
    expect(refused('http://[::ffff:169.254.169.254]/latest')).toBe('ipv4Mapped:linkLocal');
    expect(refused('http://10.0.0.2:8080/v1')).toBe('private');
    expect(refused('http://localhost:11434/v1')).toBe('loopback');
    expect(refused('http://127.0.0.1:4011/')).toBe('loopback');
    expect(refused('https://api.openai.com/v1')).toBeNull();
    expect(refused('http://internal.example:8080/v1')).toBeNull();
    expect(refused('http://8.8.8.8/')).toBeNull();
  });

  it('lets the allowlisted host:port through, with the default port filled in', () => {
    expect(refused('http://127.0.0.1:4010/v1')).toBeNull();
    expect(refused('http://[::1]/v1')).toBeNull();
    expect(refused('https://[::1]/v1')).toBe('loopback');
  });
});

describe('the guarded fetch', () => {
  let target: Server;
  let targetPort: number;
  let redirector: Server;
  let redirectorPort: number;
  const hits: string[] = [];

  beforeAll(async () => {
    target = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('private');
    });
    redirector = createServer((req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${targetPort}/via-redirect` });
      res.end();
    });
    await Promise.all([target, redirector].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    targetPort = (target.address() as AddressInfo).port;
    redirectorPort = (redirector.address() as AddressInfo).port;
  });
  beforeEach(() => (hits.length = 0));
  afterAll(async () => {
    await Promise.all([target, redirector].map((s) => new Promise((r) => s.close(r))));
  });

  const refusal = async (promise: Promise<unknown>) => blockedDestinationOf(await promise.then(() => null, (err: unknown) => err))?.range;

  it('refuses private literals in every spelling, and the server sees nothing', async () => {
    const { fetch } = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [] });
    expect(await refusal(fetch(`http://127.0.0.1:${targetPort}/a`))).toBe('loopback');
    expect(await refusal(fetch(`http://[::ffff:127.0.0.1]:${targetPort}/b`))).toBe('ipv4Mapped:loopback');
    expect(await refusal(fetch(`http://[::ffff:7f00:1]:${targetPort}/c`))).toBe('ipv4Mapped:loopback');
    expect(await refusal(fetch(`http://2130706433:${targetPort}/d`))).toBe('loopback');
    expect(hits).toEqual([]);
  });

  it('refuses a name that resolves to a private address', async () => {
    const resolve: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const { fetch } = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [], resolve });
    expect(await refusal(fetch(`http://tools.example:${targetPort}/name`))).toBe('loopback');
    // One private address among public ones is enough to refuse.
    const mixed: Resolve = async () => [{ address: '93.184.216.34', family: 4 }, { address: '::ffff:127.0.0.1', family: 6 }];
    expect(await refusal(createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [], resolve: mixed }).fetch(`http://tools.example:${targetPort}/`))).toBe(
      'ipv4Mapped:loopback',
    );
    expect(hits).toEqual([]);
  });

  it('refuses a name through the system resolver too (localhost)', async () => {
    const { fetch } = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [] });
    expect(await refusal(fetch(`http://localhost:${targetPort}/system`))).toMatch(/loopback/);
    expect(hits).toEqual([]);
  });

  it('connects to the address its own resolution checked: a name that turns private later never reaches it', async () => {
    // Rebinding: the first answer is public, every later one private. Checking and connecting
    // are one resolution, so the first request goes to the public address (where nothing
    // answers) and the next connection, resolved again, is refused.
    const answers: string[] = [];
    const rebinding: Resolve = async () => {
      const address = answers.length === 0 ? '93.184.216.34' : '127.0.0.1';
      answers.push(address);
      return [{ address, family: 4 }];
    };
    const { fetch } = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [], resolve: rebinding });
    const first = await fetch(`http://rebind.example:${targetPort}/first`, { signal: AbortSignal.timeout(3000) }).then(
      () => 'answered',
      (err: unknown) => (blockedDestinationOf(err) ? 'refused' : 'not reached'),
    );
    expect(first).toBe('not reached');
    expect(await refusal(fetch(`http://rebind.example:${targetPort}/second`))).toBe('loopback');
    expect(answers).toEqual(['93.184.216.34', '127.0.0.1']);
    expect(hits).toEqual([]);
  });

  it('follows no redirect into a private address: each new connection is checked', async () => {
    const { fetch } = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [`127.0.0.1:${redirectorPort}`] });
    expect(await refusal(fetch(`http://127.0.0.1:${redirectorPort}/start`))).toBe('loopback');
    expect(hits).toEqual([]);
  });

  it('reaches an allowlisted host:port, and anything with the blanket switch', async () => {
    const allowed = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [`127.0.0.1:${targetPort}`] });
    expect(await (await allowed.fetch(`http://127.0.0.1:${targetPort}/listed`)).text()).toBe('private');
    // The allowlist is exact: the same address under another spelling is not listed.
    expect(await refusal(allowed.fetch(`http://[::ffff:127.0.0.1]:${targetPort}/other-spelling`))).toBe('ipv4Mapped:loopback');
    const open = createDestinationGuard({ allowPrivateNetworks: true, allowedPrivateDestinations: [] });
    expect((await open.fetch(`http://127.0.0.1:${redirectorPort}/start`)).status).toBe(200);
    expect(hits).toEqual(['/listed', '/via-redirect']);
  });
});

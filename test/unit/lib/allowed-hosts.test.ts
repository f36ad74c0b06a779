// The allowed hosts of a tool secret: what an entry may be, its canonical form, and which URLs it matches.
import { destinationOf, isAllowedHost, parseAllowedHost } from '../../../lib/net/allowed-hosts';

describe('parseAllowedHost', () => {
  it.each([
    ['Billing.Example.COM', 'billing.example.com'],
    ['billing.example.com.', 'billing.example.com'],
    ['billing.example.com:8443', 'billing.example.com:8443'],
    ['203.0.113.7', '203.0.113.7'],
    ['203.0.113.7:8080', '203.0.113.7:8080'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
  ])('reads %s as %s', (entry, canonical) => {
    expect(parseAllowedHost(entry)).toBe(canonical);
  });

  it.each(['', 'https://billing.example.com', 'billing.example.com/v2', '*.example.com', 'user@billing.example.com', 'billing.example.com:0', 'billing.example.com:65536', 'bill ing.example.com', '2001:db8::1', 'a:1:2', '[zz]', '[2001:db8::1]:443', 'bücher.example', 'billing.example.com:0443', '1.2.3', '999.1.1.1', '-a.example.com', 'a..b'])(
    'refuses %j',
    (entry) => {
      expect(() => parseAllowedHost(entry)).toThrow();
    },
  );
});

describe('isAllowedHost', () => {
  const allowed = ['billing.example.com', 'api.example.com:8443', '203.0.113.7'];
  it.each([
    ['https://billing.example.com/v2/x', true],
    ['http://billing.example.com/x', true],
    ['https://BILLING.example.com./x', true],
    ['https://billing.example.com:8443/x', false],
    ['https://sub.billing.example.com/x', false],
    ['https://billing.example.com.evil.net/x', false],
    ['https://api.example.com:8443/x', true],
    ['http://api.example.com:8443/x', true],
    ['https://api.example.com/x', false],
    ['https://203.0.113.7/x', true],
    ['https://203.0.113.7:8443/x', false],
    ['https://[::ffff:203.0.113.7]/x', false],
  ])('%s → %s', (url, expected) => {
    expect(isAllowedHost(allowed, new URL(url))).toBe(expected);
  });

  it('names the destination with its port', () => {
    expect(destinationOf(new URL('https://Evil.example.net/x'))).toBe('evil.example.net:443');
    expect(destinationOf(new URL('http://[::1]:8080/'))).toBe('[::1]:8080');
  });
});

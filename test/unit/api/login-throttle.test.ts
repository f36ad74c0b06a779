// Who the login throttle counts as one client: an IPv4 address, or an IPv6 client's /64.
import { clientNetwork } from '../../../api/auth/login-throttle';

it.each([
  ['203.0.113.9', '203.0.113.9'],
  ['::ffff:203.0.113.9', '203.0.113.9'],
  ['2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
  ['2001:db8:aa:bb::ffff', '2001:db8:aa:bb::/64'],
  ['2001:0db8:00aa:00bb:ffff:ffff:ffff:ffff', '2001:db8:aa:bb::/64'],
  ['2001:db8::1', '2001:db8:0:0::/64'],
  ['::1', '0:0:0:0::/64'],
  ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
  ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  [undefined, 'unknown'],
])('counts %s as %s', (ip, network) => {
  expect(clientNetwork(ip)).toBe(network);
});

it('puts two addresses of one /64 together and two /64s apart', () => {
  expect(clientNetwork('2001:db8:1:2::a')).toBe(clientNetwork('2001:db8:1:2:ffff::b'));
  expect(clientNetwork('2001:db8:1:2::a')).not.toBe(clientNetwork('2001:db8:1:3::a'));
});

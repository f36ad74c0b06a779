// Loopback names, Host headers and peer addresses, as the dev-only trust of the local Web UI reads them.
import { isLoopbackAddress, isLoopbackHostHeader, isLoopbackName } from '../../../lib/net/loopback';

it('takes loopback peers, IPv4-mapped ones included, and nothing else', () => {
  for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect([a, isLoopbackAddress(a)]).toEqual([a, true]);
  for (const a of [undefined, '', '192.0.2.2', 'fd00::2', '::ffff:192.0.2.2', '0.0.0.0', '::', 'localhost']) expect([a, isLoopbackAddress(a)]).toEqual([a, false]);
});

it('takes localhost, 127.0.0.0/8 and [::1] as names', () => {
  for (const n of ['localhost', '127.0.0.1', '127.1.2.3', '[::1]']) expect([n, isLoopbackName(n)]).toEqual([n, true]);
  for (const n of ['localhost.example', 'example.localhost', '192.0.2.7', '[fd00::2]', '0.0.0.0', '']) expect([n, isLoopbackName(n)]).toEqual([n, false]);
});

it('reads a Host header whole: a loopback name with an optional port, nothing around it', () => {
  for (const h of ['localhost:3000', 'LOCALHOST:3000', 'localhost', '127.0.0.1:3000', '[::1]:3000']) expect([h, isLoopbackHostHeader(h)]).toEqual([h, true]);
  for (const h of [undefined, '', 'evil.example:3000', 'evil.example@localhost:3000', 'localhost:3000/x', 'localhost.:3000', 'localhost:3000 ', 'rebound.example', '[fd00::2]:3000']) {
    expect([h, isLoopbackHostHeader(h)]).toEqual([h, false]);
  }
});

// TRUST_PROXY takes the forms Express's `trust proxy` takes, means what Express makes of them,
// and stops the process on anything else.
import express from 'express';
import { ConfigError, loadConfig } from '../../../lib/config';
import { parseTrustProxy } from '../../../lib/trust-proxy';

const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };

/** Express's own reading of a setting: does it trust `address` as the hop at `index`? */
function expressTrusts(setting: unknown, address: string, index = 0): boolean {
  const app = express();
  app.set('trust proxy', setting);
  return (app.get('trust proxy fn') as (address: string, index: number) => boolean)(address, index);
}

it('keeps loopback as the default', () => {
  expect(loadConfig(minimal).TRUST_PROXY).toEqual(['loopback']);
  expect(expressTrusts(loadConfig(minimal).TRUST_PROXY, '127.0.0.1')).toBe(true);
  expect(expressTrusts(loadConfig(minimal).TRUST_PROXY, '10.0.0.1')).toBe(false);
});

it.each([
  ['false', false, [['127.0.0.1', 0, false]]],
  ['true', true, [['203.0.113.9', 5, true]]],
  ['0', 0, [['127.0.0.1', 0, false]]],
  ['2', 2, [['203.0.113.9', 1, true], ['203.0.113.9', 2, false]]],
  ['loopback', ['loopback'], [['::1', 0, true], ['10.0.0.1', 0, false]]],
  [' 10.0.0.0/8 , 192.168.1.7, uniquelocal ', ['10.0.0.0/8', '192.168.1.7', 'uniquelocal'], [['10.200.0.1', 0, true], ['172.16.0.1', 0, true], ['203.0.113.9', 0, false]]],
  ['2001:db8::/32,linklocal', ['2001:db8::/32', 'linklocal'], [['2001:db8:1::5', 0, true], ['169.254.1.1', 0, true], ['2001:db9::1', 0, false]]],
] as const)('reads %j as Express does', (value, parsed, probes) => {
  expect(parseTrustProxy(value)).toEqual(parsed);
  expect(loadConfig({ ...minimal, TRUST_PROXY: value }).TRUST_PROXY).toEqual(parsed);
  for (const [address, index, trusted] of probes) expect(expressTrusts(parsed, address, index)).toBe(trusted);
});

it.each(['yes', 'Loopback', '10.0.0.0/33', '10.0.0.0/0', '10.0.0.256', '10.0.0.0/8,,', 'fe80::1%eth0', '-1', 'proxy.internal'])(
  'refuses %j at start, naming the variable',
  (value) => {
    expect(parseTrustProxy(value)).toBeNull();
    expect(() => loadConfig({ ...minimal, TRUST_PROXY: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...minimal, TRUST_PROXY: value })).toThrow(/TRUST_PROXY: must be false, true, a hop count/);
  },
);

it('refuses to trust every X-Forwarded-For in production', () => {
  expect(() => loadConfig({ ...minimal, NODE_ENV: 'production', TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: true trusts any X-Forwarded-For/);
  expect(loadConfig({ ...minimal, NODE_ENV: 'production', TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
});

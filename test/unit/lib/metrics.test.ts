// The metrics' own rules: label values stay bounded and printable, the scrape listener answers
// only GET /metrics and only with its token, and the public port cannot be the scrape port.
import { boundedLabel, OTHER_LABEL } from '../../../lib/metrics/labels';
import { startMetricsServer, type MetricsServer } from '../../../lib/metrics/server';
import { ConfigError, loadConfig } from '../../../lib/config';

describe('boundedLabel', () => {
  it('keeps the first values it sees, folds the rest into other, and cleans each', () => {
    const label = boundedLabel(2);
    expect(label('gpt-4o')).toBe('gpt-4o');
    expect(label('claude')).toBe('claude');
    expect(label('third')).toBe(OTHER_LABEL);
    expect(label('gpt-4o')).toBe('gpt-4o');
    const other = boundedLabel(5);
    expect(other('a\nb"\u00e9c')).toBe('ab"c');
    expect(other('x'.repeat(200))).toHaveLength(64);
    expect(other('')).toBe('unknown');
    expect(other(null)).toBe('unknown');
  });
});

describe('the scrape listener', () => {
  const token = 'm'.repeat(40);
  let server: MetricsServer;
  let renders = 0;
  let failNext = false;
  beforeAll(async () => {
    server = await startMetricsServer({
      host: '127.0.0.1',
      port: 0,
      token,
      async render() {
        renders++;
        if (failNext) throw new Error('broken');
        return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'up 1\n' };
      },
    });
  });
  afterAll(() => server.close());
  const get = (path: string, init: RequestInit = {}) => fetch(`http://127.0.0.1:${server.port}${path}`, init);

  it('renders nothing for a caller without the token, and the metrics for one with it', async () => {
    const anonymous = await get('/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain('Bearer');
    expect((await get('/metrics', { headers: { authorization: `Bearer ${token}x` } })).status).toBe(401);
    expect((await get('/metrics', { headers: { authorization: `Basic ${token}` } })).status).toBe(401);
    expect(renders).toBe(0);
    const ok = await get('/metrics?x=1', { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('up 1\n');
    expect(renders).toBe(1);
  });

  it('answers nothing but GET and HEAD /metrics, and a failed render without detail', async () => {
    const auth = { authorization: `Bearer ${token}` };
    expect((await get('/', { headers: auth })).status).toBe(404);
    expect((await get('/metrics/x', { headers: auth })).status).toBe(404);
    expect((await get('/metrics', { method: 'POST', headers: auth, body: 'x' })).status).toBe(405);
    expect((await get('/metrics', { method: 'HEAD', headers: auth })).status).toBe(200);
    failNext = true;
    const failed = await get('/metrics', { headers: auth });
    expect(failed.status).toBe(500);
    expect(await failed.text()).not.toContain('broken');
  });
});

it('refuses METRICS_PORT equal to PORT', () => {
  const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };
  expect(() => loadConfig({ ...minimal, PORT: '9464', METRICS_PORT: '9464' })).toThrow(ConfigError);
  expect(loadConfig({ ...minimal, METRICS_PORT: '9464', WORKER_METRICS_PORT: '9465' })).toMatchObject({ METRICS_PORT: 9464, WORKER_METRICS_PORT: 9465, METRICS_HOST: '127.0.0.1', METRICS_REFRESH_MS: 30_000 });
  expect(loadConfig(minimal).METRICS_PORT).toBeUndefined();
});

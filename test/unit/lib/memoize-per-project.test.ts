// The per-project cache shares one load between callers, expires, forgets and drops failures.
import { memoizePerProject } from '../../../lib/memoize-per-project';

it('shares a load, reloads after the TTL or forget, and never keeps a failure', async () => {
  let loads = 0;
  let fail = false;
  const cache = memoizePerProject(50, async (t, p) => {
    loads++;
    if (fail) throw new Error('down');
    return `${t}/${p}#${loads}`;
  });
  const [a, b] = await Promise.all([cache.get('t', 'p'), cache.get('t', 'p')]);
  expect(a).toBe('t/p#1');
  expect(b).toBe(a);
  expect(await cache.get('t', 'q')).toBe('t/q#2');
  cache.forget('t', 'p');
  expect(await cache.get('t', 'p')).toBe('t/p#3');
  await new Promise((r) => setTimeout(r, 60));
  fail = true;
  await expect(cache.get('t', 'p')).rejects.toThrow('down');
  fail = false;
  expect(await cache.get('t', 'p')).toBe('t/p#5');
});

// U+0000 in text: found with its path for the API's 422, replaced for the worker's records.
import { pathOfNul, storable } from '../../../lib/storable-text';

it('names the first string or key holding U+0000', () => {
  expect(pathOfNul({ a: 'ok', b: ['x', 'y\u0000'] }, 'body')).toBe('body.b.1');
  expect(pathOfNul({ nested: { 'k\u0000': 1 } }, 'query')).toBe('query.nested.k\\u0000');
  expect(pathOfNul({ a: 'fine', n: 1, z: null, t: true }, 'body')).toBeNull();
});

it('replaces U+0000 in strings and keys, leaving everything else as it was', () => {
  const when = new Date(0);
  expect(storable({ 'k\u0000': ['a\u0000b', 2, null, { c: 'd' }], when })).toEqual({ 'k\ufffd': ['a\ufffdb', 2, null, { c: 'd' }], when });
  expect(storable('plain')).toBe('plain');
});

// The pure SHA-256 matches the standard test vectors.

import { createHash } from 'node:crypto';
import { hashFiles, sha256Hex } from '../../../abl';

describe('sha256Hex', () => {
  it.each([
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1'],
  ])('%j', (input, want) => expect(sha256Hex(input)).toBe(want));

  it('agrees with node:crypto on unicode and long input', () => {
    for (const s of ['héllo wörld ✓ 🚀', 'x'.repeat(1000), 'a\u0000b\r\n']) {
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
    }
  });

  it('hashFiles is order-independent', () => {
    const a = { path: 'a', content: '1' };
    const b = { path: 'b', content: '2' };
    expect(hashFiles([a, b])).toBe(hashFiles([b, a]));
    expect(hashFiles([a, b])).not.toBe(hashFiles([a, { path: 'b', content: '3' }]));
  });
});

import { randomBytes } from 'node:crypto';
import { keyRingSetting, parseKeyRing } from '../../../lib/key-ring';

const k = () => randomBytes(32).toString('base64');

describe('parseKeyRing', () => {
  it('takes the first key as current and keeps every key by id', () => {
    const a = k();
    const b = k();
    const ring = parseKeyRing(` k2:${a} , k1:${b}`);
    expect(ring.current.id).toBe('k2');
    expect(ring.current.key.equals(Buffer.from(a, 'base64'))).toBe(true);
    expect([...ring.byId.keys()]).toEqual(['k2', 'k1']);
  });

  it('refuses bad entries and says which, without echoing key material', () => {
    const short = Buffer.alloc(16).toString('base64');
    expect(() => parseKeyRing('')).toThrow(/lists no key/);
    expect(() => parseKeyRing(k())).toThrow(/entry 1 must be id:base64key/);
    expect(() => parseKeyRing(`a:${short}`)).toThrow(/key "a" must be 32 bytes/);
    expect(() => parseKeyRing(`a:${k()},a:${k()}`)).toThrow(/listed twice/);
    expect(() => parseKeyRing(`bad id:${k()}`)).toThrow(/entry 1/);
    const result = keyRingSetting.safeParse(`a:${short}`);
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).not.toContain(short);
  });
});

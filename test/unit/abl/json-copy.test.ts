// The compiler's output copy is exactly what a JSON round trip makes, on any value it may meet.

import fc from 'fast-check';
import { jsonCopy } from '../../../abl/json-copy';

const roundTrip = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;

/** Deep equality that also tells key order, -0 from 0, and own "__proto__" keys apart. */
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k]));
}

describe('jsonCopy', () => {
  it('equals JSON.parse(JSON.stringify(v)) on arbitrary values', () => {
    const value = fc.anything({ withBoxedValues: true, withNullPrototype: true, withObjectString: true, withDate: true, withSparseArray: true, maxDepth: 4 });
    // Wrapped: a bare `undefined` has no JSON text to parse back.
    fc.assert(fc.property(value, (v) => same(jsonCopy({ v }), roundTrip({ v })) && same(jsonCopy([v]), roundTrip([v]))), { numRuns: 500 });
  });

  it('drops undefined and functions, nulls them in arrays, and turns non-finite numbers and -0 into JSON', () => {
    const v = { a: undefined, b: () => 1, c: [undefined, () => 1, Symbol('s'), Number.NaN, -0, Infinity], d: -0, e: new Date(0), [Symbol('k')]: 1 };
    expect(same(jsonCopy(v), roundTrip(v))).toBe(true);
    expect(jsonCopy(v)).toEqual({ c: [null, null, null, null, 0, null], d: 0, e: '1970-01-01T00:00:00.000Z' });
  });

  it('keeps "__proto__" as an own key and never sets a prototype', () => {
    const v = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
    const out = jsonCopy(v) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(same(out, roundTrip(v))).toBe(true);
  });

  it('copies every node: shared nodes come out separate', () => {
    const shared = { n: 1 };
    const out = jsonCopy({ a: shared, b: [shared] });
    expect(out.a).not.toBe(shared);
    expect(out.a).not.toBe(out.b[0]);
    expect(out).toEqual({ a: { n: 1 }, b: [{ n: 1 }] });
  });

  it('applies toJSON with its key, and reads only own enumerable keys of class instances', () => {
    class Point {
      constructor(readonly x: number) {}
      get norm(): number {
        return Math.abs(this.x);
      }
    }
    const v = { p: new Point(-2), t: { toJSON: (k: string) => `key ${k}` }, list: [{ toJSON: (k: string) => k }] };
    expect(same(jsonCopy(v), roundTrip(v))).toBe(true);
  });

  it('stays exact when Object.prototype has an enumerable key', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.injected = 1;
    try {
      const v = { a: { b: 1 } };
      expect(same(jsonCopy(v), roundTrip(v))).toBe(true);
      expect(Object.keys(jsonCopy(v))).toEqual(['a']);
    } finally {
      delete proto.injected;
    }
  });
});

// A deep copy equal to JSON.parse(JSON.stringify(value)) for acyclic values, made without the
// text in between: the compiler's output copy and imported tools are several MB per project.

type Plain = Record<string, unknown>;

/**
 * What `JSON.parse(JSON.stringify(value))` returns: `undefined`, functions and symbols dropped from
 * objects (null in arrays), non-finite numbers null, -0 as 0, `toJSON` applied, boxed primitives
 * unboxed, only own enumerable string keys kept, every node copied (no sharing). The value must
 * be acyclic (JSON.stringify would throw on a cycle).
 */
export function jsonCopy<T>(value: T): T {
  // `for…in` (fast on plain objects) also walks inherited enumerable keys: only safe while
  // Object.prototype has none.
  let inheritedKeys = false;
  for (const k in Object.prototype) {
    void k;
    inheritedKeys = true;
    break;
  }
  return copyValue(value, '', inheritedKeys) as T;
}

/** One value as JSON would carry it; `undefined` when JSON leaves it out. */
function copyValue(input: unknown, key: string | number, inheritedKeys: boolean): unknown {
  let v = input;
  if (v !== null && (typeof v === 'object' || typeof v === 'bigint')) {
    const toJSON = (v as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') v = (toJSON as (k: string) => unknown).call(v, String(key));
  }
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : null;
    case 'object':
      break;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return undefined; // undefined, function, symbol
  }
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      const x = copyValue(v[i], i, inheritedKeys);
      out.push(x === undefined ? null : x);
    }
    return out;
  }
  const o = v as Plain;
  const proto: unknown = Object.getPrototypeOf(o);
  const plain = proto === Object.prototype || proto === null;
  if (!plain) {
    if (o instanceof Number) return copyValue(Number(o), key, inheritedKeys);
    if (o instanceof String) return String(o);
    if (o instanceof Boolean) return o.valueOf();
  }
  const out: Plain = {};
  if (plain && !inheritedKeys) {
    for (const k in o) put(out, k, copyValue(o[k], k, inheritedKeys));
  } else {
    for (const k of Object.keys(o)) put(out, k, copyValue(o[k], k, inheritedKeys));
  }
  return out;
}

function put(out: Plain, k: string, x: unknown): void {
  if (x === undefined) return;
  // JSON.parse makes "__proto__" an own property; plain assignment would set the prototype.
  if (k === '__proto__') Object.defineProperty(out, k, { value: x, writable: true, enumerable: true, configurable: true });
  else out[k] = x;
}

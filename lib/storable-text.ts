// Text the store cannot keep: the NUL character (U+0000). MongoDB stores it, PostgreSQL (under the
// dev store) cannot, and no field of the API has a use for it. A request that carries one in any
// string or key is refused once, in the route pipeline, with 422 (pathOfNul); what the worker
// records of text it did not choose (a tool's answer, a model's reply) has it replaced (storable).

/** The path (`body.title`, `params.id`) of the first string or key holding U+0000, or null. */
export function pathOfNul(value: unknown, where: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? where : null;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = pathOfNul(item, `${where}.${index}`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) return `${where}.${JSON.stringify(key).slice(1, -1)}`;
      const found = pathOfNul(item, `${where}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/** The value with U+0000 in every string and key replaced by U+FFFD, for the records people read. */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => storable(item)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [storable(key), storable(item)])) as T;
  }
  return value;
}

// Text the store cannot keep: the NUL character (U+0000). MongoDB stores it, PostgreSQL (under the
// dev store) cannot, and no field of the API has a use for it, so a request that carries one in
// any string or key is refused once, here, with 422 instead of failing in whichever write meets it.

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

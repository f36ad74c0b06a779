// Label values kept bounded: a label whose values come from outside (a model name a project
// configured) keeps the first few distinct values it sees and folds the rest into `other`, so
// no caller can grow a process's series without bound. Ids of tenants, projects and sessions are
// never labels at all (docs/operations.md, "What to watch").

/** The value every label takes past its bound. */
export const OTHER_LABEL = 'other';

/** A label value at most this long; longer ones are cut. */
const MAX_LABEL_LENGTH = 64;

/** Maps raw values to at most `max` distinct label values (then `other`), each printable and short. */
export function boundedLabel(max: number): (raw: string | null | undefined) => string {
  const seen = new Set<string>();
  return (raw) => {
    const value = clean(raw);
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER_LABEL;
    seen.add(value);
    return value;
  };
}

/** Printable ASCII only, cut to a short length; empty or missing values are `unknown`. */
function clean(raw: string | null | undefined): string {
  const value = (raw ?? '').replace(/[^\x20-\x7e]/g, '').slice(0, MAX_LABEL_LENGTH);
  return value.length > 0 ? value : 'unknown';
}

/** A value from a fixed list, or `other`. */
export function oneOf<T extends string>(allowed: readonly T[], raw: string | null | undefined): T | typeof OTHER_LABEL {
  return (allowed as readonly string[]).includes(raw ?? '') ? (raw as T) : OTHER_LABEL;
}

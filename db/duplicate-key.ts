// MongoDB's duplicate-key error (E11000): a unique index refused an insert or update.

/**
 * A write a unique index refused. MongoDB says so with code 11000 on every write; the dev store
 * (FerretDB 1.24 on PostgreSQL) does on inserts, but answers an update that breaks a unique index
 * with an InternalError carrying PostgreSQL's unique-violation message.
 */
export function isDuplicateKey(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as { code?: number }).code === 11000) return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && message.includes('duplicate key value violates unique constraint');
}

/**
 * Whether an unordered bulk insert failed only on ids already written (a retried batch): every
 * write error is E11000. mongoose hands the driver's write errors over as `{ err, index }`, the
 * code inside `err`; a single write error may come as an object rather than an array.
 */
export function isOnlyDuplicateKeys(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: number; writeErrors?: { code?: number; err?: { code?: number } }[] | { code?: number; err?: { code?: number } } };
  if (!e.writeErrors) return e.code === 11000;
  const writeErrors = Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors];
  return writeErrors.every((w) => (w.code ?? w.err?.code) === 11000);
}

// MongoDB's duplicate-key error (E11000): a unique index refused an insert or update.
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

// "The database did not answer, try again": the driver's connection failures (and the socket error
// it lets through when the server closed a pooled connection), and FerretDB's
// SQLite backend refusing a write while another holds its lock. Callers answer 503, not 500.

/** The MongoDB driver's classes for "the database did not answer" (by name: jest realms break instanceof). */
const UNREACHABLE = new Set(['MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoServerSelectionError', 'MongoNotConnectedError', 'MongoTopologyClosedError']);

/**
 * FerretDB on SQLite reports a busy database as a server error whose message carries SQLite's
 * own words (it has no code of its own); nothing was written, so a retry is safe.
 */
const BUSY = /\b(?:SQLITE_BUSY|database is locked)\b/;

/**
 * A write on a pooled connection the server had just closed (a store restarting): the driver
 * passes Node's own EPIPE through, unwrapped. Nothing reached the server, so a retry is safe.
 */
const WRITE_AFTER_CLOSE = 'EPIPE';

export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown; code?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.name === 'string' && UNREACHABLE.has(e.name)) return true;
  if (e.name === 'Error' && e.code === WRITE_AFTER_CLOSE) return true;
  return e.name === 'MongoServerError' && typeof e.message === 'string' && BUSY.test(e.message);
}

// Which database failures the API answers with 503 (retry) rather than 500.
import express from 'express';
import { type AddressInfo } from 'node:net';
import { isDatabaseUnavailable } from '../../../db/unavailable';
import { errorHandler } from '../../../api/middleware/errors';
import { createLogger } from '../../../lib/logger';

const named = (name: string, message = 'x') => Object.assign(new Error(message), { name });

describe('isDatabaseUnavailable', () => {
  it.each(['MongoNetworkError', 'MongoServerSelectionError', 'MongoNotConnectedError', 'MongoTopologyClosedError', 'MongoNetworkTimeoutError'])('counts %s', (name) => {
    expect(isDatabaseUnavailable(named(name))).toBe(true);
  });

  it("counts FerretDB's busy SQLite database, in either of SQLite's words", () => {
    expect(isDatabaseUnavailable(named('MongoServerError', 'database is locked (5) (SQLITE_BUSY)'))).toBe(true);
    expect(isDatabaseUnavailable(named('MongoServerError', 'SQLITE_BUSY'))).toBe(true);
  });

  it("counts the EPIPE the driver lets through when it writes on a connection the server closed", () => {
    const writeAfterFin = Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' });
    expect(isDatabaseUnavailable(writeAfterFin)).toBe(true);
  });

  it('leaves every other error alone', () => {
    expect(isDatabaseUnavailable(named('MongoServerError', 'E11000 duplicate key error'))).toBe(false);
    expect(isDatabaseUnavailable(named('Error', 'database is locked'))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
    expect(isDatabaseUnavailable('database is locked')).toBe(false);
  });
});

describe('the error middleware', () => {
  async function statusFor(err: Error): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
    const app = express();
    app.get('/x', () => {
      throw err;
    });
    app.use(errorHandler(createLogger({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
    } finally {
      server.close();
    }
  }

  it('answers a busy database with 503 and Retry-After, and anything else unknown with 500', async () => {
    const busy = await statusFor(named('MongoServerError', 'database is locked (SQLITE_BUSY)'));
    expect(busy).toEqual({ status: 503, retryAfter: '1', body: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The database is unavailable; retry the request' } } });
    const other = await statusFor(named('MongoServerError', 'E11000 duplicate key error'));
    expect(other.status).toBe(500);
    // The driver's words never reach the caller.
    expect(JSON.stringify(other.body)).not.toContain('E11000');
  });
});

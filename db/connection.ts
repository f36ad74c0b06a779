// MongoDB connection (mongoose). One connection per process; models are bound to it by createModels.
import mongoose, { type Connection } from 'mongoose';

export interface MongoConnectOptions {
  /** Fail a query quickly instead of buffering while MongoDB is down (readiness shows it). */
  serverSelectionTimeoutMs?: number;
}

// Indexes are built by syncIndexes (db/models.ts) when the API, the worker and the dev stack start,
// once and before their first write (the voice agent writes only to collections they made);
// mongoose's own background build (autoIndex) would send every createIndexes a second time.

export async function connectMongo(uri: string, options: MongoConnectOptions = {}): Promise<Connection> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 5000,
    bufferCommands: false,
    autoIndex: false,
  });
  await connection.asPromise();
  return connection;
}

/** Round trip to the server; throws when it is unreachable. */
export async function pingMongo(connection: Connection, timeoutMs = 2000): Promise<void> {
  const db = connection.db;
  if (!db) throw new Error('MongoDB connection is not open');
  await Promise.race([
    db.command({ ping: 1 }),
    new Promise((_, reject) => setTimeout(() => reject(new Error('MongoDB ping timed out')), timeoutMs).unref()),
  ]);
}

// MongoDB connection (mongoose). One connection per process; models are bound to it by createModels.
import mongoose, { type Connection } from 'mongoose';

export interface MongoConnectOptions {
  /** Fail a query quickly instead of buffering while MongoDB is down (readiness shows it). */
  serverSelectionTimeoutMs?: number;
}

export async function connectMongo(uri: string, options: MongoConnectOptions = {}): Promise<Connection> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 5000,
    bufferCommands: false,
    autoIndex: true,
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

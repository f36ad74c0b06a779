// The structured logger (pino). Credentials and secrets are redacted wherever they appear.
import pino, { type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-public-key"]',
  'req.headers["x-sdk-token"]',
  'req.headers["x-platform-admin-token"]',
  'req.headers["x-callback-signature"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.apiKey',
  '*.token',
  '*.secret',
  '*.value',
  // Tool secrets: resolved values travel as `secrets` maps; a stored secret's field is `value`.
  '*.secrets',
  // A voice channel connection's Twilio auth token, wherever a request or document carries it.
  '*.authToken',
  'authToken',
  'secrets',
  'value',
  'password',
  'apiKey',
  'token',
];

/** `destination` defaults to stdout; tests pass a stream to read what was logged. */
export function createLogger(options: { level: string; name?: string }, destination?: pino.DestinationStream): Logger {
  const settings = {
    name: options.name ?? 'switchboard',
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  return destination ? pino(settings, destination) : pino(settings);
}

// An HTTP-async receiver in Express (docs/http-async.md "A receiver"): verifies every callback's
// signature on the raw body, handles each message_id once, and answers 200 quickly.
import express, { type Express } from 'express';
import { verifyAblSignature } from './verify-signature';

export interface AblCallback {
  event?: 'agent.response' | 'agent.status' | 'agent.media';
  message_id: string;
  session_key: string;
  response?: string;
  status?: string;
  metadata?: Record<string, unknown>;
}

export function createReceiver(
  signingSecret: string, // the subscription's `whsec_…` secret
  onCallback: (callback: AblCallback) => void, // hand it to your front end; keep it quick
  seen: { has(id: string): boolean; add(id: string): unknown } = new Set<string>(), // a durable store in production
): Express {
  const app = express();
  app.post('/hooks/abl', express.raw({ type: 'application/json', limit: '1mb' }), (req, res) => {
    const raw = req.body as Buffer;
    if (!Buffer.isBuffer(raw) || !verifyAblSignature(signingSecret, raw, req.header('x-abl-timestamp'), req.header('x-abl-signature'))) {
      res.status(401).end();
      return;
    }
    const callback = JSON.parse(raw.toString('utf8')) as AblCallback;
    // The same message_id can arrive more than once (a retry after a lost answer): handled already.
    if (!seen.has(callback.message_id)) {
      seen.add(callback.message_id);
      onCallback(callback);
    }
    res.status(200).end();
  });
  return app;
}

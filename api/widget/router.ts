// GET /sdk/widget.js: the embeddable chat widget (web/widget/, built by api/widget/bundle.ts), and
// GET /sdk/voice.js, its real-time voice half (web/voice/), each with an ETag and a five-minute
// public cache. And, on the dev stack only, GET /demo: a page that
// embeds it with the dev project's public key (WIDGET_DEMO_PUBLIC_KEY; never in production).
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import '../openapi/registry';
import { type AppContext } from '../context';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { type BrowserScript, widgetBundle } from './bundle';
import { liveKitClientUrl, liveKitHttpUrl } from '../../core/voice/livekit';

const CACHE_CONTROL = 'public, max-age=300';

/** Whether `If-None-Match` (a list of tags, or `*`) names the current tag; weak tags compare by value. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** Answers a built script with its ETag and a five-minute public cache (304 when the page has it). */
async function sendScript(req: Request, res: Response, script: BrowserScript): Promise<typeof RESPONSE_SENT> {
  const bundle = await widgetBundle(script);
  res.set({
    'Cache-Control': CACHE_CONTROL,
    ETag: bundle.etag,
    // Pages that isolate themselves (Cross-Origin-Embedder-Policy) may still load it.
    'Cross-Origin-Resource-Policy': 'cross-origin',
    'X-Content-Type-Options': 'nosniff',
  });
  if (matchesEtag(req.headers['if-none-match'], bundle.etag)) {
    res.status(304).end();
    return RESPONSE_SENT;
  }
  res.status(200).type('application/javascript; charset=utf-8').send(bundle.code);
  return RESPONSE_SENT;
}

const CACHING =
  'Public and the same for everyone: `Cache-Control: public, max-age=300` and a strong `ETag`; a request whose `If-None-Match` names it is answered 304 with no body.';

export const widgetRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/sdk/widget.js',
    operationId: 'getWidgetScript',
    summary: 'The embeddable chat widget: one script tag puts a chat launcher and window on a page',
    description: 'Load it with `<script src="…/sdk/widget.js" data-public-key="pk_…" data-project="…"></script>` (docs/widget.md). ' + CACHING,
    tags: ['Widget and SDK'],
    auth: 'public',
    responseContentType: 'application/javascript',
    responseHeaders: { 'Cache-Control': CACHE_CONTROL, ETag: '"DCt6GbiMbZTVaMSwLGuI7jfPHDH"' },
    notModified: true,
    response: z.string().openapi({ description: 'The widget script (JavaScript, UTF-8)', example: '(()=>{…})();' }),
    handler: ({ req, res }) => sendScript(req, res, 'widget'),
  }),
  defineRoute({
    method: 'get',
    path: '/sdk/voice.js',
    operationId: 'getVoiceScript',
    summary: "The widget's real-time voice client, loaded by the widget when a visitor starts a voice call",
    description:
      "The widget loads it on the microphone button's first press (it carries LiveKit's browser client, several times the widget's size); a page does not include it itself. " +
      'It defines `window.SwitchboardVoice.connect({ url, token, onState, onCaption, onEnd })` for the room that `POST /api/v1/voice/sessions` made (docs/voice.md). ' +
      CACHING,
    tags: ['Widget and SDK'],
    auth: 'public',
    responseContentType: 'application/javascript',
    responseHeaders: { 'Cache-Control': CACHE_CONTROL, ETag: '"DCt6GbiMbZTVaMSwLGuI7jfPHDH"' },
    notModified: true,
    response: z.string().openapi({ description: 'The voice script (JavaScript, UTF-8)', example: '(()=>{…})();' }),
    handler: ({ req, res }) => sendScript(req, res, 'voice'),
  }),
];

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function demoPage(publicKey: string, projectId: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard widget demo</title>
<style>body{font:16px/1.5 Georgia,serif;max-width:40em;margin:3em auto;padding:0 1em;color:#222;background:#fbfaf7}pre{white-space:pre-wrap;word-break:break-all;background:#eee;padding:.5em}code{font-size:.85em}
/* Page styles like these do not reach into the widget (it lives in a shadow root). */ button{background:hotpink!important;font-family:Impact!important}</style>
</head><body>
<h1>Switchboard widget demo</h1>
<p>This page embeds the chat widget with one script tag and the dev project's public key. Open the chat
(bottom right) and talk to the seeded support desk: ask about an invoice and it hands you to its billing
specialist. Reload the page and the conversation is still there. The microphone button beside the
message box starts a spoken conversation with the same agent.</p>
<pre><code>&lt;script src="/sdk/widget.js" data-public-key="${escapeHtml(publicKey)}" data-project="${escapeHtml(projectId)}"&gt;&lt;/script&gt;</code></pre>
<p>Served by the dev stack only (docs/widget.md, "The demo page").</p>
<script src="/sdk/widget.js" data-public-key="${escapeHtml(publicKey)}" data-project="${escapeHtml(projectId)}"></script>
</body></html>
`;
}

/**
 * GET /demo while WIDGET_DEMO_PUBLIC_KEY and WIDGET_DEMO_PROJECT_ID are set (the dev stack sets them;
 * the configuration refuses them in production); otherwise the path is unknown (404). An HTML page,
 * not part of the API: not in /openapi.json, like /codec/login.
 */
export function widgetDemoRouter(ctx: AppContext): Router {
  const router = express.Router();
  router.get('/demo', (_req: Request, res: Response, next) => {
    const { WIDGET_DEMO_PUBLIC_KEY: key, WIDGET_DEMO_PROJECT_ID: project, NODE_ENV } = ctx.config;
    if (!key || !project || NODE_ENV === 'production') return next();
    // A voice call reaches the LiveKit server (its WebSocket, and its HTTP address when a connection fails).
    const { LIVEKIT_URL } = ctx.config;
    const liveKit = LIVEKIT_URL ? ` ${liveKitClientUrl(LIVEKIT_URL)} ${liveKitHttpUrl(LIVEKIT_URL)}` : '';
    res.status(200).type('html').set({
      'Cache-Control': 'no-store',
      'Content-Security-Policy': `default-src 'none'; script-src 'self'; connect-src 'self'${liveKit}; media-src 'self' blob: mediastream:; style-src 'unsafe-inline'; img-src 'self' data: https:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
    });
    res.send(demoPage(key, project));
  });
  return router;
}

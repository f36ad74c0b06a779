// A browser sign-in for the codec endpoint: the Temporal Web UI cannot add the operator's token to
// its calls, but with "Include cross-origin credentials" on it sends this site's cookies. An
// operator enters PLATFORM_ADMIN_TOKEN once at /codec/login and gets a 12-hour HttpOnly cookie.
import { createHmac } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { safeEqual } from '../../lib/crypto';
import { deriveKey, KEY_PURPOSE } from '../../lib/master-keys';
import { type AppContext } from '../context';

export const CODEC_SESSION_COOKIE = 'sb_codec_session';
const SESSION_SECONDS = 12 * 60 * 60;

/**
 * `<expiry>.<HMAC of it>` under a key derived from the token for this use alone (the token itself
 * is a credential, not a signing key): changing PLATFORM_ADMIN_TOKEN ends every session.
 */
function sign(token: string, expiresAt: number): string {
  return createHmac('sha256', deriveKey(token, KEY_PURPOSE.codecOperatorSession, 'switchboard')).update(`codec-session:${expiresAt}`).digest('base64url');
}

export function sessionCookieValue(token: string, now = Date.now()): string {
  const expiresAt = Math.floor(now / 1000) + SESSION_SECONDS;
  return `${expiresAt}.${sign(token, expiresAt)}`;
}

function cookieFrom(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * True when the request carries a live session cookie and comes from the Temporal UI's origin: a
 * cookie alone would let any page the operator opens on this site call the endpoint.
 */
export function hasCodecSession(ctx: AppContext, req: Request): boolean {
  const token = ctx.config.PLATFORM_ADMIN_TOKEN;
  const origin = ctx.config.TEMPORAL_UI_ORIGIN;
  const value = cookieFrom(req, CODEC_SESSION_COOKIE);
  if (!token || !origin || !value || req.headers.origin !== origin) return false;
  const [expiry, mac] = value.split('.');
  const expiresAt = Number(expiry);
  if (!Number.isInteger(expiresAt) || expiresAt * 1000 <= Date.now() || !mac) return false;
  return safeEqual(mac, sign(token, expiresAt));
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>` +
  '<style>body{font:16px system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}input{font:inherit;padding:.3em;width:100%}button{font:inherit;margin-top:1em}</style>' +
  `</head><body><h1>${title}</h1>${body}</body></html>`;

const FORM = page(
  'Switchboard codec sign-in',
  '<p>Sign in with the platform admin token so the Temporal Web UI can show decoded payloads. ' +
    'In the Web UI, open the codec server settings and turn on <em>Include cross-origin credentials</em>.</p>' +
    '<form method="post" action="/codec/login"><label>PLATFORM_ADMIN_TOKEN<br><input type="password" name="token" autocomplete="off" required></label>' +
    '<br><button type="submit">Sign in for 12 hours</button></form>',
);

function send(res: Response, status: number, html: string): void {
  res.status(status).type('html').setHeader('Cache-Control', 'no-store');
  // The page must not be framed or run scripts: it takes the operator token.
  res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  res.send(html);
}

/** GET /codec/login (the form) and POST /codec/login (sets the cookie). Not JSON: not in /openapi.json. */
export function codecLoginRouter(ctx: AppContext): Router {
  const router = express.Router();
  router.get('/codec/login', (_req, res) => send(res, 200, FORM));
  router.post('/codec/login', express.urlencoded({ extended: false, limit: '4kb', inflate: false }), (req: Request, res: Response) => {
    const expected = ctx.config.PLATFORM_ADMIN_TOKEN;
    const given = (req.body as Record<string, unknown> | undefined)?.token;
    if (!expected) return send(res, 503, page('Codec sign-in is disabled', '<p>PLATFORM_ADMIN_TOKEN is not set on the API.</p>'));
    if (typeof given !== 'string' || !safeEqual(given, expected)) {
      return send(res, 401, page('Wrong token', '<p>That is not the platform admin token. <a href="/codec/login">Try again</a>.</p>'));
    }
    const secure = ctx.config.PUBLIC_BASE_URL.startsWith('https:') ? '; Secure' : '';
    res.setHeader('Set-Cookie', `${CODEC_SESSION_COOKIE}=${sessionCookieValue(expected)}; Path=/codec; HttpOnly; SameSite=Strict; Max-Age=${SESSION_SECONDS}${secure}`);
    send(res, 200, page('Signed in', '<p>The Temporal Web UI can now decode payloads in this browser for 12 hours. You can close this tab.</p>'));
  });
  return router;
}

// Dev only (CODEC_TRUST_LOCAL_UI): the codec endpoint answers the Temporal Web UI of the local
// stack with no operator credential, so one developer on one machine sees decoded payloads with
// no sign-in. Every condition below must hold; any other caller still needs the credential.
import { type Request } from 'express';
import { isLoopbackAddress, isLoopbackHostHeader } from '../../lib/net/loopback';
import { type AppContext } from '../context';

/**
 * True for a request from a browser page of TEMPORAL_UI_ORIGIN (which the config requires to be on
 * loopback), reaching the API on this machine under a loopback name, straight from a loopback peer:
 * - the Origin header: a browser sets it and a page of another site cannot forge it;
 * - the Host header: a page of a site whose name was re-pointed at 127.0.0.1 (DNS rebinding) names its own host;
 * - the socket's peer (never X-Forwarded-For) and no forwarding header: a proxy or tunnel on this
 *   machine relaying someone else's request is not this machine's user.
 */
export function isTrustedLocalUi(ctx: AppContext, req: Request): boolean {
  const { CODEC_TRUST_LOCAL_UI: on, TEMPORAL_UI_ORIGIN: origin, NODE_ENV } = ctx.config;
  if (!on || NODE_ENV === 'production' || !origin || req.headers.origin !== origin) return false;
  if (req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined) return false;
  return isLoopbackHostHeader(req.headers.host) && isLoopbackAddress(req.socket.remoteAddress);
}

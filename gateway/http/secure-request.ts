import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Express } from 'express';

/** Whether a request arrived over TLS, directly or through a trusted proxy (express's `req.secure` rule). */
export type IsSecure = (req: IncomingMessage) => boolean;

/** Express's compiled `trust proxy` setting: is the peer at `address` a proxy we trust? */
export type TrustProxyFn = (address: string | undefined, hop: number) => boolean;

/**
 * Express's own rule (req.secure), for requests that never enter express (the webhook fast
 * path, WebSocket upgrades) as well as those that do: TLS on the socket, or a trusted proxy
 * whose first `X-Forwarded-Proto` value is `https`. A client that is not a trusted proxy
 * cannot claim https.
 */
export function isSecure(req: IncomingMessage, trust: TrustProxyFn): boolean {
  if ((req.socket as TLSSocket).encrypted) return true;
  if (!trust(req.socket.remoteAddress, 0)) return false;
  return String(req.headers['x-forwarded-proto'] ?? '').split(',', 1)[0]!.trim() === 'https';
}

/** `isSecure` under the app's `trust proxy` setting. */
export function secureRequestRule(app: Express): IsSecure {
  return (req) => isSecure(req, app.get('trust proxy fn') as TrustProxyFn);
}

import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

/**
 * The webchat capacity baseline: bare `ws` sockets on a node:http server, the least any
 * WebSocket endpoint holds per open socket. Same `ws` settings as the gateway's webchat
 * server (no per-message deflate, no client tracking); every text frame is answered with one
 * small JSON frame (the hello's welcome stand-in). No auth, no database, no NATS.
 *
 * Env: PORT (0 = any). Prints one JSON line {"msg":"ws floor listening","url":...} when
 * ready; SIGTERM stops it.
 */
const sockets = new Set<import('ws').WebSocket>();
const wss = new WebSocketServer({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1', perMessageDeflate: false, clientTracking: false });
wss.on('connection', (ws) => {
  sockets.add(ws);
  ws.on('close', () => sockets.delete(ws));
  ws.on('error', () => {});
  ws.on('message', () => ws.send('{"type":"welcome"}'));
});
wss.on('listening', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'ws floor listening', url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}` })}\n`);
});
process.on('SIGTERM', () => {
  for (const ws of sockets) ws.terminate();
  wss.close(() => process.exit(0));
});

import { WebSocket, type RawData } from 'ws';
import type { Logger } from '../../lib/logger.js';
import { FrameError, parseClientFrame, type ClientFrame, type ServerFrame } from './frames.js';

export interface SocketLimits {
  /** Sustained frames per second (a token bucket); a flood above it closes the socket with 1008. */
  framesPerSecond: number;
  frameBurst: number;
  /** Bytes a client may leave unread before it is dropped (1008). */
  maxBufferedBytes: number;
}

/** The frames the visitor's session answers; `ping` and `typing` are the socket's own. */
export type SessionFrame = Extract<ClientFrame, { type: 'hello' | 'identify' | 'message' }>;

/**
 * What the socket tells its owner. Methods of the owner, not closures: a socket is held per
 * visitor, and under tsx every named closure carries its own property store (~300 bytes).
 */
export interface SocketEvents {
  onFrame(frame: SessionFrame): void;
  /** Once, when the socket has closed. */
  onSocketClosed(): void;
}

/**
 * The WebSocket of one widget tab: frames in (the flood limit, parsing; a bad frame is
 * answered with an `error` frame and the socket stays open), frames out (a client that does
 * not read is dropped rather than buffered for), and the heartbeat.
 */
export class VisitorSocket {
  readonly #ws: WebSocket;
  readonly #limits: SocketLimits;
  readonly #now: () => number;
  #tokens: number;
  #refilledAt: number;
  /** No frame is handled any more: flooded, or closed. */
  #closed = false;
  /** Heartbeat: set by every pong / frame, cleared by every ping. */
  #alive = true;

  constructor(ws: WebSocket, options: { limits: SocketLimits; now: () => number; logger: Logger; integrationId: number }, events: SocketEvents) {
    this.#ws = ws;
    this.#limits = options.limits;
    this.#now = options.now;
    this.#tokens = options.limits.frameBurst;
    this.#refilledAt = options.now();
    ws.on('message', (data, isBinary) => this.#onFrame(data, isBinary, events));
    ws.on('pong', () => {
      this.#alive = true;
    });
    ws.on('error', (err) => options.logger.debug({ err, integrationId: options.integrationId }, 'webchat: socket error'));
    // `on`, not `once`: ws emits 'close' once, and a once-wrapper costs each held socket ~350 bytes.
    ws.on('close', () => {
      this.#closed = true;
      events.onSocketClosed();
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(frame: ServerFrame): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    if (this.#ws.bufferedAmount > this.#limits.maxBufferedBytes) {
      // A client that does not read: drop it rather than buffer without bound (it resumes with lastSeq).
      this.close(1008, 'not reading');
      return;
    }
    this.#ws.send(JSON.stringify(frame));
  }

  fail(err: FrameError): void {
    this.send(err.frame);
  }

  /** A socket that did not answer the previous ping is terminated. */
  ping(): void {
    if (!this.#alive) {
      this.#ws.terminate();
      return;
    }
    this.#alive = false;
    try {
      this.#ws.ping();
    } catch {
      this.#ws.terminate();
    }
  }

  close(code: number, reason: string): void {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) this.#ws.close(code, reason);
  }

  terminate(): void {
    this.#ws.terminate();
  }

  #onFrame(data: RawData, isBinary: boolean, events: SocketEvents): void {
    if (this.#closed) return;
    this.#alive = true;
    if (!this.#takeToken()) {
      this.close(1008, 'too many frames');
      this.#closed = true;
      return;
    }
    if (isBinary) return this.fail(new FrameError('INVALID_FRAME', 'Frames must be JSON text.'));
    let frame: ClientFrame;
    try {
      frame = parseClientFrame(dataToString(data));
    } catch (err) {
      if (err instanceof FrameError) return this.fail(err);
      throw err;
    }
    if (frame.type === 'ping') return this.send({ type: 'pong' });
    // The visitor's typing is accepted silently.
    if (frame.type === 'typing') return;
    events.onFrame(frame);
  }

  /** The flood limit's token bucket. */
  #takeToken(): boolean {
    const now = this.#now();
    const { framesPerSecond, frameBurst } = this.#limits;
    this.#tokens = Math.min(frameBurst, this.#tokens + ((now - this.#refilledAt) / 1000) * framesPerSecond);
    this.#refilledAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

function dataToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

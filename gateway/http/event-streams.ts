import type { Request, Response } from 'express';
import { AppError } from '../../lib/errors.js';
import { PerKeyLimit } from '../../lib/per-key-limit.js';
import type { CredentialWatch } from '../auth/credential-watch.js';

/** A comment line this often keeps proxies from closing a quiet stream. */
export const DEFAULT_HEARTBEAT_MS = 15_000;
/** How long a client waits before reconnecting (the stream's `retry:` field). */
const RECONNECT_MS = 3_000;
/** Retry-After of a stream refused because the company holds its limit: streams are long, places free slowly. */
const FULL_RETRY_AFTER_SECONDS = 10;

export interface EventStreamsOptions {
  credentials: CredentialWatch;
  /** SSE_MAX_PER_COMPANY: streams one company may hold open in this process. */
  maxPerCompany: number;
  heartbeatMs?: number;
}

/** One open Server-Sent Events answer. */
export interface EventStream {
  /** Writes one event (`event:` and a JSON `data:` line). */
  send(event: string, data: unknown): void;
  /** Aborted once the stream is over: the client left, its credential ended, or end() was called. */
  readonly signal: AbortSignal;
  /** Ends the answer (again: nothing). */
  end(): void;
}

/**
 * The Server-Sent Event streams of a gateway process. A stream lasts no longer than the
 * credential that opened it: when it is revoked, logged out, removed with its user or
 * expires (gateway/auth/credential-watch.ts), the stream gets a last event
 * `end {"reason":"credential_revoked" | "credential_expired"}` and is closed, and a client
 * has to come back with a good credential. A company holds at most `maxPerCompany` streams
 * here; one more is refused with 429 RATE_LIMITED (Retry-After) before anything is written,
 * and other companies are not affected.
 */
export class EventStreams {
  readonly #credentials: CredentialWatch;
  readonly #heartbeatMs: number;
  readonly #open: PerKeyLimit<number>;

  constructor(options: EventStreamsOptions) {
    this.#credentials = options.credentials;
    this.#heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.#open = new PerKeyLimit(options.maxPerCompany);
  }

  /** Streams `companyId` holds open in this process. */
  openFor(companyId: number): number {
    return this.#open.heldBy(companyId);
  }

  /**
   * Starts the answer of an authenticated request (`req.principal`) as an event stream, or
   * throws 429 when its company already holds its limit.
   */
  open(req: Request, res: Response): EventStream {
    const principal = req.principal;
    if (!principal) throw new AppError('UNAUTHORIZED');
    const { companyId } = principal;
    const release = this.#open.take(companyId);
    if (!release) {
      throw new AppError('RATE_LIMITED', `This company already has ${this.#open.max} live streams open; close one or retry later.`, {
        headers: { 'Retry-After': String(FULL_RETRY_AFTER_SECONDS) },
      });
    }

    const controller = new AbortController();
    let heartbeat: NodeJS.Timeout | undefined;
    let unwatch = () => {};
    const end = () => {
      if (controller.signal.aborted) return;
      controller.abort();
      clearInterval(heartbeat);
      unwatch();
      release();
      if (!res.writableEnded) res.end();
    };
    const send = (event: string, data: unknown) => {
      if (!controller.signal.aborted) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    res.write(`retry: ${RECONNECT_MS}\n\n`);
    heartbeat = setInterval(() => res.write(': heartbeat\n\n'), this.#heartbeatMs);
    unwatch = this.#credentials.watch(principal, (reason) => {
      send('end', { reason });
      end();
    });
    // 'close' comes once: after the answer ended, or when the client went away first.
    res.on('close', end);
    return { send, signal: controller.signal, end };
  }
}

import OpenAI from 'openai';
import type { AddressGuard } from '../address-guard.js';
import { connectionPool, outboundFetch } from '../outbound-http.js';

/**
 * The model servers a process talks to, one per (base URL, API key): each keeps one client of
 * the `openai` package and a keep-alive connection pool of its own (through
 * lib/outbound-http.ts: the address guard, body cap and redirect rules apply), which keeps up
 * to IDLE_CONNECTIONS connections open between waves of calls, and its own pace:
 *
 * - A server that asks us to slow down (429, or 503 with Retry-After) pauses every call to it
 *   until its Retry-After has passed, and its calls in flight are halved: at most half of
 *   those under way when it complained go out at once again, one more for every answer it
 *   gives, until it has answered `RECOVERY_MS` without complaint (then no limit again).
 * - Other servers, and other keys on the same server (another company's account), are not
 *   slowed by it.
 */
export const MAX_MODEL_SERVERS = 10_000;
/** The largest chat-completions answer read (a long answer is tens of KB). */
export const MAX_MODEL_ANSWER_BYTES = 2 * 1024 * 1024;
/** After this long without a complaint a server's calls are no longer limited. */
export const RECOVERY_MS = 60_000;
/** Idle keep-alive connections a model server's pool keeps (the default MODEL_MAX_CONCURRENCY). */
export const IDLE_CONNECTIONS = 1024;

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class ModelServer {
  readonly client: OpenAI;
  readonly #now: () => number;
  #inflight = 0;
  /** Calls allowed at once; Infinity until the server first complains. */
  #limit = Infinity;
  #pausedUntil = 0;
  #lastComplaint = 0;
  readonly #waiting: Waiter[] = [];
  #timer: NodeJS.Timeout | null = null;

  constructor(client: OpenAI, now: () => number = Date.now) {
    this.client = client;
    this.#now = now;
  }

  /** Calls sent and not answered yet. */
  get inflight(): number {
    return this.#inflight;
  }

  /** Calls allowed at once now (Infinity: no limit). */
  get limit(): number {
    return this.#limit;
  }

  /** Calls waiting for the server's pause or limit. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Takes a place for one request now, if the server is not paused and under its limit. */
  tryEnter(): boolean {
    if (this.#waiting.length > 0 || !this.#open()) return false;
    this.#inflight++;
    return true;
  }

  /** Waits for a place (in arrival order); rejects with the signal's reason when it aborts. */
  enter(signal?: AbortSignal): Promise<void> {
    if (this.tryEnter()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.#waiting.indexOf(w);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.#waiting.push(w);
      this.#pump();
    });
  }

  /**
   * Gives the place back with what the request got: an answer (`ok`), a request to slow down
   * for `retryAfterMs` (`slow_down`), or any other failure (`failed`: no change of pace).
   */
  leave(outcome: 'ok' | 'slow_down' | 'failed', retryAfterMs = 0): void {
    const now = this.#now();
    if (outcome === 'slow_down') {
      this.#lastComplaint = now;
      this.#pausedUntil = Math.max(this.#pausedUntil, now + retryAfterMs);
      this.#limit = Math.max(1, Math.floor(Math.min(this.#limit, this.#inflight) / 2));
    } else if (outcome === 'ok' && Number.isFinite(this.#limit)) {
      this.#limit = now - this.#lastComplaint >= RECOVERY_MS ? Infinity : this.#limit + 1;
    }
    this.#inflight--;
    this.#pump();
  }

  #open(): boolean {
    return this.#now() >= this.#pausedUntil && this.#inflight < this.#limit;
  }

  #pump(): void {
    while (this.#waiting.length > 0 && this.#open()) {
      const w = this.#waiting.shift()!;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      this.#inflight++;
      w.resolve();
    }
    const pause = this.#pausedUntil - this.#now();
    if (this.#waiting.length > 0 && pause > 0 && !this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#pump();
      }, pause);
      this.#timer.unref?.();
    }
  }
}

const servers = new Map<string, ModelServer>();

/**
 * The server of a base URL and key (created on first use; the least recently used of more
 * than MAX_MODEL_SERVERS is forgotten). `guard`: the addresses its requests may reach.
 */
export function modelServer(baseUrl: string, apiKey: string | null, guard: AddressGuard | null): ModelServer {
  const key = `${guard ? 'g' : 't'}\n${baseUrl}\n${apiKey ?? ''}`;
  const hit = servers.get(key);
  if (hit) {
    servers.delete(key);
    servers.set(key, hit);
    return hit;
  }
  const client = new OpenAI({
    baseURL: baseUrl,
    // Self-hosted servers often need no key; the package insists on a string.
    apiKey: apiKey ?? 'not-needed',
    // Never pick these up from the environment: the server is the agent's, not ours.
    organization: null,
    project: null,
    // Retries are ours (lib/agents/openai-model.ts): a server's pace is shared by its calls.
    maxRetries: 0,
    logLevel: 'off',
    fetch: outboundFetch({ guard, maxBodyBytes: MAX_MODEL_ANSWER_BYTES, pool: connectionPool(IDLE_CONNECTIONS) }),
  });
  const server = new ModelServer(client);
  if (servers.size >= MAX_MODEL_SERVERS) servers.delete(servers.keys().next().value!);
  servers.set(key, server);
  return server;
}

import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { inboxBody, QUESTIONS, signBody } from './payloads.js';
import { seededRandom } from '../../test/support/random.js';

/**
 * The chaos soak's load (bench/sections/chaos.ts): signed Chat2Desk `inbox` webhooks at a
 * steady rate, each with a unique message id, from `customers` customers in turn (customer
 * k writes every customers / rate seconds, so one customer's messages come one after the
 * other), customer k belonging to tenant k % 2. Requests go to the gateways in turn, as a
 * load balancer in front of them would send them. A share of the webhooks (5 %) is
 * delivered twice: the same body again a few seconds later, as Chat2Desk sometimes does.
 *
 * Any answer but 200 (a 503 while JetStream has no quorum, a refused connection while a
 * gateway is down, a timeout) is retried like a helpdesk retries, every 1–2 s for up to
 * two minutes, with the same body; the first 200 of a message id is its acknowledgement.
 */

/** A seeded generator of numbers in [0, 1) (mulberry32): the same seed, the same schedule. */
export const seeded = seededRandom;

export const between = (random: () => number, lo: number, hi: number): number => lo + (hi - lo) * random();

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export interface ChaosTenant {
  integrationId: number;
  webhookSecret: string;
}

export interface ChaosMessage {
  id: string;
  n: number;
  customer: number;
  clientId: string;
  tenant: number;
  /** performance.now() of its first attempt. */
  firstAt: number;
  /** performance.now() of its first 200 (either copy); null: never acknowledged. */
  ackAt: number | null;
  attempts: number;
  /** Delivered twice (the duplicate copy). */
  duplicate: boolean;
  /** Copies still being delivered. */
  inFlight: number;
}

/** What an attempt that got no 200 got instead. */
export type Refusal = '503' | 'refused' | 'reset' | 'timeout' | `http ${number}` | `error ${string}`;

export interface FailedAttempt {
  at: number;
  gateway: number;
  outcome: Refusal;
}

export interface LoadOptions {
  gateways: string[];
  tenants: [ChaosTenant, ChaosTenant];
  rate: number;
  customers: number;
  durationMs: number;
  random: () => number;
  /** Prefix of the message ids (unique per run and pass). */
  idPrefix: string;
  signal: AbortSignal;
  duplicateShare?: number;
  retryForMs?: number;
  timeoutMs?: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** One POST; never rejects: the status, or what went wrong. */
function post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<200 | Refusal> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: 200 | Refusal) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode === 200 ? 200 : res.statusCode === 503 ? '503' : `http ${res.statusCode ?? 0}`));
      res.on('error', () => done('reset'));
    });
    req.setTimeout(timeoutMs, () => {
      done('timeout');
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? err.message;
      done(code === 'ECONNREFUSED' ? 'refused' : code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up/.test(err.message) ? 'reset' : `error ${code}`);
    });
    req.end(body);
  });
}

export class WebhookLoad {
  readonly messages = new Map<string, ChaosMessage>();
  readonly failures: FailedAttempt[] = [];
  readonly #o: Required<LoadOptions>;
  readonly #inFlight = new Set<Promise<void>>();
  #nextGateway = 0;
  #sent = 0;
  #acked = 0;
  #duplicates = 0;
  #startedAt = 0;

  constructor(o: LoadOptions) {
    this.#o = { duplicateShare: 0.05, retryForMs: 120_000, timeoutMs: 15_000, ...o };
  }

  get sent(): number {
    return this.#sent;
  }
  get acked(): number {
    return this.#acked;
  }
  get duplicates(): number {
    return this.#duplicates;
  }
  /** Deliveries (copies) not settled yet: waiting for their 200 or retrying. */
  get retrying(): number {
    return this.#inFlight.size;
  }
  get startedAt(): number {
    return this.#startedAt;
  }

  /** Sends at the rate until the duration is over (or the signal aborts); resolves when the last message was started. */
  async run(): Promise<void> {
    const { rate, customers, durationMs, signal, random } = this.#o;
    const total = Math.max(1, Math.round((rate * durationMs) / 1000));
    this.#startedAt = performance.now();
    for (let n = 0; n < total && !signal.aborted; n++) {
      await sleep(this.#startedAt + (n * 1000) / rate - performance.now(), signal);
      if (signal.aborted) break;
      const customer = n % customers;
      const round = Math.floor(n / customers);
      const tenant = customer % 2;
      const clientId = `c${customer}`;
      const m: ChaosMessage = {
        id: `${this.#o.idPrefix}-${n}`, n, customer, clientId, tenant, firstAt: performance.now(), ackAt: null, attempts: 0, duplicate: false, inFlight: 0,
      };
      const body = inboxBody(m.id, clientId, QUESTIONS[(round + customer) % QUESTIONS.length]!, n);
      const headers = { 'content-type': 'application/json', 'x-webhook-signature': signBody(this.#o.tenants[tenant]!.webhookSecret, body) };
      this.messages.set(m.id, m);
      this.#sent++;
      this.#track(this.#deliver(m, body, headers));
      if (random() < this.#o.duplicateShare) {
        m.duplicate = true;
        this.#duplicates++;
        const delay = between(random, 1_000, 4_000);
        this.#track(sleep(delay, signal).then(() => (signal.aborted ? undefined : this.#deliver(m, body, headers))));
      }
    }
  }

  /** Resolves once every delivery got its 200 or gave up (at most retryForMs after the last one began). */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  #track(p: Promise<void>): void {
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  async #deliver(m: ChaosMessage, body: string, headers: Record<string, string>): Promise<void> {
    const { gateways, signal, random, tenants } = this.#o;
    const path = `/api/webhook/helpdesk/${tenants[m.tenant]!.integrationId}`;
    const began = performance.now();
    m.inFlight++;
    try {
      while (!signal.aborted) {
        const gateway = this.#nextGateway++ % gateways.length;
        m.attempts++;
        const outcome = await post(gateways[gateway]! + path, body, headers, this.#o.timeoutMs);
        if (outcome === 200) {
          if (m.ackAt === null) {
            m.ackAt = performance.now();
            this.#acked++;
          }
          return;
        }
        this.failures.push({ at: performance.now(), gateway, outcome });
        if (performance.now() - began > this.#o.retryForMs) return;
        await sleep(between(random, 1_000, 2_000), signal);
      }
    } finally {
      m.inFlight--;
    }
  }
}

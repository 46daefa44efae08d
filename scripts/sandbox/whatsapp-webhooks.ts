import { createHmac, randomBytes } from 'node:crypto';

/**
 * The webhooks Meta's WhatsApp Cloud API posts to a business (the sandbox's half that calls
 * us): the `whatsapp_business_account` body shapes, the `X-Hub-Signature-256` signature, and
 * a poster that tries a refused delivery again a few times, as Meta does (over hours there;
 * the delays are an option here).
 */

/** Who the webhooks are about: the business account and its phone number. */
export interface WhatsAppAccount {
  wabaId: string;
  phoneNumberId: string;
  displayPhoneNumber: string;
}

export type WhatsAppStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface InboundTextInput {
  from: string;
  name?: string;
  text: string;
  /** The message's id; a fresh `wamid.` one unless given. */
  wamid?: string;
  /** Unix seconds (a string of digits, as Meta sends it); now unless given. */
  timestamp?: string | number;
}

export interface StatusInput {
  wamid: string;
  status: WhatsAppStatus;
  recipientId: string;
  timestamp?: string | number;
  /** What the send carried (our outbox id), echoed back as Meta does. */
  bizOpaqueCallbackData?: string;
  /** For `failed`: Meta's `errors[]` (e.g. `[{code:131026, title:"Message undeliverable"}]`). */
  errors?: { code: number; title: string; message?: string; error_data?: { details: string } }[];
}

/** A signed webhook: the raw body as posted, and its `X-Hub-Signature-256` value. */
export interface SignedBody {
  body: string;
  signature: string;
}

/** A fresh message id shaped like Meta's (`wamid.` and base64). */
export const newWamid = (): string => `wamid.${randomBytes(30).toString('base64')}`;

const unixNow = (): string => String(Math.floor(Date.now() / 1000));

/** `sha256=<hex HMAC-SHA256(appSecret, body)>`, Meta's `X-Hub-Signature-256`. */
export const hubSignature = (appSecret: string, body: string | Buffer): string => `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;

/** The envelope of one change of field "messages". */
function envelope(account: WhatsAppAccount, value: Record<string, unknown>): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: account.wabaId,
        changes: [
          {
            field: 'messages',
            value: { messaging_product: 'whatsapp', metadata: { display_phone_number: account.displayPhoneNumber, phone_number_id: account.phoneNumberId }, ...value },
          },
        ],
      },
    ],
  };
}

/** A customer's text message as Meta posts it. */
export function inboundTextPayload(account: WhatsAppAccount, input: InboundTextInput): Record<string, unknown> {
  return envelope(account, {
    contacts: [{ profile: { name: input.name ?? 'Sandbox Customer' }, wa_id: input.from }],
    messages: [{ from: input.from, id: input.wamid ?? newWamid(), timestamp: String(input.timestamp ?? unixNow()), type: 'text', text: { body: input.text } }],
  });
}

/** One status of one of our sent messages as Meta posts it (each status in a webhook of its own). */
export function statusPayload(account: WhatsAppAccount, input: StatusInput): Record<string, unknown> {
  const status: Record<string, unknown> = {
    id: input.wamid,
    status: input.status,
    timestamp: String(input.timestamp ?? unixNow()),
    recipient_id: input.recipientId,
    ...(input.bizOpaqueCallbackData !== undefined ? { biz_opaque_callback_data: input.bizOpaqueCallbackData } : {}),
  };
  if (input.status === 'failed') status.errors = input.errors ?? [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'Message Undeliverable.' } }];
  else status.pricing = { billable: true, pricing_model: 'PMP', category: 'service', type: 'free_customer_service' };
  return envelope(account, { statuses: [status] });
}

export const signed = (appSecret: string, payload: unknown): SignedBody => {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return { body, signature: hubSignature(appSecret, body) };
};

/** What became of one webhook the sandbox posted: the answer to each attempt (0: no connection), and whether one was taken. */
export interface WebhookDelivery {
  body: string;
  statuses: number[];
  delivered: boolean;
}

/**
 * Posts signed bodies to one webhook URL, each tried again after `retryDelaysMs` while
 * refused (non-2xx or no connection). `deliveries` lists every body posted; `idle()`
 * resolves once none is still being tried.
 */
export class WebhookPoster {
  readonly deliveries: WebhookDelivery[] = [];
  #pending = new Set<Promise<void>>();
  #stopped = false;
  readonly #stop = new AbortController();

  constructor(
    readonly url: string,
    readonly appSecret: string,
    readonly retryDelaysMs: readonly number[],
  ) {}

  /** Starts posting `payload` (in the background); resolves when taken or given up. */
  post(payload: unknown): Promise<WebhookDelivery> {
    const { body, signature } = signed(this.appSecret, payload);
    const delivery: WebhookDelivery = { body, statuses: [], delivered: false };
    this.deliveries.push(delivery);
    const run = this.#attempts(delivery, signature);
    const done = run.then(() => undefined);
    this.#pending.add(done);
    void done.finally(() => this.#pending.delete(done));
    return run;
  }

  async #attempts(delivery: WebhookDelivery, signature: string): Promise<WebhookDelivery> {
    for (let attempt = 0; attempt <= this.retryDelaysMs.length && !this.#stopped; attempt++) {
      if (attempt > 0) await this.#pause(this.retryDelaysMs[attempt - 1]);
      if (this.#stopped) break;
      let status = 0;
      try {
        const res = await fetch(this.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature, 'user-agent': 'facebookexternalua' },
          body: delivery.body,
          signal: AbortSignal.any([AbortSignal.timeout(10_000), this.#stop.signal]),
        });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = 0;
      }
      delivery.statuses.push(status);
      if (status >= 200 && status < 300) {
        delivery.delivered = true;
        return delivery;
      }
    }
    return delivery;
  }

  /** A wait between attempts that stop() ends at once. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      const signal = this.#stop.signal;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Gives up every body still being tried (no more attempts; the ones under way are aborted). */
  stop(): void {
    this.#stopped = true;
    this.#stop.abort();
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Resolves once no posted body is still being tried. */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}

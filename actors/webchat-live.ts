import { randomUUID } from 'node:crypto';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import type { StreamNames } from '../lib/streams.js';
import { publishWebchatPush, type LivePush } from '../lib/webchat-pushes.js';
import type { ConversationRow } from './tables/conversations.js';

/** Pushes a webchat visitor's previews of an answer in the making (lib/webchat-pushes.ts) on the visitor's outbound subject. */
export class WebchatLive {
  readonly #nc: NatsConnection;
  readonly #names: StreamNames;
  readonly #logger: Logger;

  constructor(nc: NatsConnection, names: StreamNames, logger: Logger) {
    this.#nc = nc;
    this.#names = names;
    this.#logger = logger;
  }

  /** The agent started on an answer of this conversation. */
  typing(conv: ConversationRow): void {
    this.#push(conv, { type: 'typing', conversationId: conv.id, role: 'agent' });
  }

  /** A sink for the pieces of one streamed answer. */
  deltas(conv: ConversationRow): (text: string) => void {
    const stream = randomUUID();
    let n = 0;
    return (text) => this.#push(conv, { type: 'delta', conversationId: conv.id, stream, n: n++, text });
  }

  #push(conv: ConversationRow, push: LivePush): void {
    try {
      publishWebchatPush(this.#nc, this.#names, { integrationId: conv.integration_id, clientId: conv.client_id }, push);
    } catch (err) {
      this.#logger.debug({ err, conversationId: conv.id }, 'host: a webchat preview push was lost (the reply still goes out)');
    }
  }
}

import { noticesOf, type ConversationNotices, type ConversationView } from '../../lib/conversations.js';
import type { SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Subscription } from '@nats-io/transport-node';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import { conversationsAmong } from './rows.js';
import type { TeamColumns } from './team-columns.js';

/**
 * What the inbox event streams of one gateway process share (gateway/conversations/conversation-feed.ts
 * is one stream): one NATS subscription per company to all of its conversations' notices,
 * each publish parsed once and handed to every stream of the company; and the look-ups the
 * streams need (conversation rows, read marks), each kind made in one statement for every
 * stream that asked since the last one. Fifty operators watching one busy company cost one
 * subscription and a few statements a second, not fifty of each.
 */
export interface FeedLookups {
  /** The views of the company's conversations among `ids` (those that exist). */
  rows(companyId: number, ids: readonly number[]): Promise<ConversationView[]>;
  /** The customer messages `userId` had seen of each of `ids` they ever read. */
  marks(userId: string, ids: readonly number[]): Promise<Map<number, number>>;
}

export interface ConversationHubDeps {
  nc: NatsConnection;
  names: StreamNames;
  sql: SqlPool;
  team: TeamColumns;
  logger: Logger;
}

interface Follower {
  take: (notices: ConversationNotices) => void;
  /** The subscription ended without being asked to (the NATS connection closed). */
  ended: () => void;
}

/**
 * Requests answered together: those made while a statement runs wait for the next one, which
 * answers all of them (so a busy moment makes fewer, larger statements, never more).
 */
class Batched<R, A> {
  #queue: { request: R; resolve: (a: A) => void; reject: (err: unknown) => void }[] = [];
  #busy = false;
  readonly #run: (requests: R[]) => Promise<(request: R) => A>;

  constructor(run: (requests: R[]) => Promise<(request: R) => A>) {
    this.#run = run;
  }

  ask(request: R): Promise<A> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      if (!this.#busy) {
        this.#busy = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const asked = this.#queue;
      this.#queue = [];
      try {
        const answer = await this.#run(asked.map((a) => a.request));
        for (const a of asked) a.resolve(answer(a.request));
      } catch (err) {
        for (const a of asked) a.reject(err);
      }
    }
    this.#busy = false;
  }
}

export class ConversationHub implements FeedLookups {
  readonly #deps: ConversationHubDeps;
  readonly #companies = new Map<number, { sub: Subscription; followers: Set<Follower> }>();
  readonly #rows: Batched<{ companyId: number; ids: readonly number[] }, ConversationView[]>;
  readonly #marks: Batched<{ userId: string; ids: readonly number[] }, Map<number, number>>;

  constructor(deps: ConversationHubDeps) {
    this.#deps = deps;
    this.#rows = new Batched(async (requests) => {
      const found = await conversationsAmong(deps.sql, [...new Set(requests.flatMap((r) => r.ids))]);
      // A row is handed only to a stream of its own company.
      return ({ companyId, ids }) => found.filter((f) => f.companyId === companyId && ids.includes(f.view.id)).map((f) => f.view);
    });
    this.#marks = new Batched(async (requests) => {
      const read = await deps.team.readMarks(requests.flatMap((r) => r.ids.map((conversationId) => ({ userId: r.userId, conversationId }))));
      return ({ userId, ids }) => new Map(ids.flatMap((id) => (read.has(`${userId}:${id}`) ? [[id, read.get(`${userId}:${id}`)!] as const] : [])));
    });
  }

  rows(companyId: number, ids: readonly number[]): Promise<ConversationView[]> {
    return ids.length ? this.#rows.ask({ companyId, ids }) : Promise.resolve([]);
  }

  marks(userId: string, ids: readonly number[]): Promise<Map<number, number>> {
    return ids.length ? this.#marks.ask({ userId, ids }) : Promise.resolve(new Map());
  }

  /**
   * Hands `take` the notices of every conversation of the company from now on (subscribed
   * before this returns: nothing published after is missed); the returned function stops it.
   */
  follow(companyId: number, take: Follower['take'], ended: Follower['ended']): () => void {
    let company = this.#companies.get(companyId);
    if (!company) {
      const followers = new Set<Follower>();
      const sub = this.#deps.nc.subscribe(this.#deps.names.companyConversationEvents(companyId), {
        callback: (err, msg) => {
          if (err) return;
          const notices = noticesOf(msg.data);
          if (notices.length === 0) return;
          for (const f of followers) {
            try {
              f.take(notices);
            } catch (e) {
              this.#deps.logger.error({ err: e, companyId }, 'conversation events: a stream failed on a notice');
            }
          }
        },
      });
      company = { sub, followers };
      this.#companies.set(companyId, company);
      const mine = company;
      void sub.closed.then(() => {
        if (this.#companies.get(companyId) === mine) this.#companies.delete(companyId);
        for (const f of mine.followers) f.ended();
        mine.followers.clear();
      });
    }
    const follower: Follower = { take, ended };
    const { followers, sub } = company;
    followers.add(follower);
    return () => {
      if (!followers.delete(follower) || followers.size > 0) return;
      if (this.#companies.get(companyId)?.sub === sub) this.#companies.delete(companyId);
      try {
        sub.unsubscribe();
      } catch {
        /* the connection is closed */
      }
    };
  }
}

import type { CallSlot } from '../lib/agents/slots.js';

/**
 * The places for model calls in flight in one worker (MODEL_MAX_CONCURRENCY), shared fairly
 * between companies (contract.md § Model calls at real model latency).
 *
 * Calls wait in one queue per group (an agent) inside one ring per company; a free place goes
 * to the next company in the ring that has a call allowed to start, and within a company to
 * its next group in turn: round robin, one call per turn (every call costs one place, so this
 * is deficit round robin with equal costs). A company with thousands of calls waiting takes
 * one turn like a company with one, so each company waits only behind its own queue. A group
 * at its own cap (an agent's `model.maxConcurrency`) is skipped until one of its calls ends.
 *
 * One company holds at most capacity − capacity/16 places (960 of 1,024): the rest is kept
 * for the other companies, so a company that took every place with a burst does not make
 * another company's next customer wait for one of its calls to end (up to a model's latency).
 *
 * A call that waits for something else (a slowed-down model server, credit held by other
 * calls) gives its place back meanwhile (`away`) and gets the next free one of its company's
 * turns afterwards, ahead of its group's queue.
 *
 * Spare places (`acquireSpare`: the calls of replays, actors/replays/runner.ts) are the low
 * priority: one is granted only while no call could take it (every call waiting, if any, waits
 * for its own agent's cap or its company's share, which a call of its own ending frees) and
 * fewer than capacity − reserve places are taken (reserve: a quarter, at least one). So the
 * reserve is always free for a customer's call, which starts at once however big the replays,
 * and a free place goes to a waiting customer's call before any replay's. Spare requests wait
 * in one queue, first come first served (the replays share their own places fairly between
 * companies before they ask here).
 */
export interface SlotRequest {
  /** Whose turn it is: the company. */
  tenant: number;
  /** Calls that share a cap (an agent); served in arrival order. */
  group: string;
  /** The group's calls in flight at most; null: no cap of its own. */
  groupLimit: number | null;
}

export interface Slot extends CallSlot {
  /** Gives the place back (once; later calls do nothing). */
  release(): void;
}

interface Waiter {
  /** null: a spare request. */
  group: Group | null;
  grant: () => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Group {
  key: string;
  tenant: Tenant;
  limit: number;
  running: number;
  queue: Waiter[];
  /** In its company's ring. */
  queued: boolean;
}

interface Tenant {
  id: number;
  /** Groups with calls waiting, in turn order. */
  ring: Group[];
  next: number;
  /** Groups known (running or waiting). */
  groups: number;
  /** Places its calls hold. */
  running: number;
  /** In the ring of companies. */
  queued: boolean;
}

export class FairSlots {
  readonly capacity: number;
  /** Places one company may hold at most. */
  readonly perCompany: number;
  #running = 0;
  #waiting = 0;
  #peak = 0;
  readonly #groups = new Map<string, Group>();
  readonly #tenants = new Map<number, Tenant>();
  /** Companies with calls waiting, in turn order. */
  readonly #ring: Tenant[] = [];
  #next = 0;
  /** Places spare requests may hold together at most. */
  readonly spareCapacity: number;
  #spareRunning = 0;
  /** Spare requests waiting, first come first served. */
  readonly #spares: Waiter[] = [];

  constructor(capacity: number) {
    this.capacity = Math.max(1, capacity);
    this.perCompany = this.capacity - Math.floor(this.capacity / 16);
    // With a single place there is nothing to keep back: replays share it (a customer's call waits for at most one of theirs).
    this.spareCapacity = Math.max(1, this.capacity - Math.max(1, Math.floor(this.capacity / 4)));
  }

  /** Places taken now. */
  get running(): number {
    return this.#running;
  }

  /** Calls waiting for a place now. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Companies with calls waiting now (a count: no company is named in the metrics). */
  get companiesWaiting(): number {
    return this.#ring.length;
  }

  /** The most places taken at once so far. */
  get peak(): number {
    return this.#peak;
  }

  /** Spare places taken now (counted in `running` too). */
  get spareRunning(): number {
    return this.#spareRunning;
  }

  /** Spare requests waiting now (not counted in `waiting`). */
  get spareWaiting(): number {
    return this.#spares.length;
  }

  /** Waits for a place (rejects with the signal's reason if it aborts first). */
  acquire(req: SlotRequest, signal?: AbortSignal): Promise<Slot> {
    const group = this.#group(req);
    return this.#take(group, false, signal).then(() => heldSlot(() => this.#leave(group), () => this.#take(group, true, signal)));
  }

  /**
   * Waits for a spare place (see the class comment; rejects with the signal's reason if it
   * aborts first). Its `away` gives the place back and waits for a spare one again, first in the queue.
   */
  acquireSpare(signal?: AbortSignal): Promise<Slot> {
    return this.#takeSpare(false, signal).then(() => heldSlot(() => this.#leaveSpare(), () => this.#takeSpare(true, signal)));
  }

  #takeSpare(first: boolean, signal?: AbortSignal): Promise<void> {
    // A call that could start now goes first (there is none unless an agent's cap was just raised).
    this.#pumpCalls();
    if (this.#spares.length === 0 && this.#running < this.spareCapacity) {
      this.#enterSpare();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const w: Waiter = { group: null, grant: resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.#spares.indexOf(w);
          if (i < 0) return;
          this.#spares.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      if (first) this.#spares.unshift(w);
      else this.#spares.push(w);
    });
  }

  #enterSpare(): void {
    this.#running++;
    this.#spareRunning++;
    if (this.#running > this.#peak) this.#peak = this.#running;
  }

  #leaveSpare(): void {
    this.#running--;
    this.#spareRunning--;
    this.#pump();
  }

  #group(req: SlotRequest): Group {
    let g = this.#groups.get(req.group);
    if (!g) {
      let tenant = this.#tenants.get(req.tenant);
      if (!tenant) {
        tenant = { id: req.tenant, ring: [], next: 0, groups: 0, running: 0, queued: false };
        this.#tenants.set(req.tenant, tenant);
      }
      g = { key: req.group, tenant, limit: Infinity, running: 0, queue: [], queued: false };
      tenant.groups++;
      this.#groups.set(req.group, g);
    }
    // An edit of the agent's cap applies from its next call.
    g.limit = req.groupLimit === null ? Infinity : Math.max(1, req.groupLimit);
    return g;
  }

  /** Resolves when the group has a place; `first`: ahead of the group's queue (a call coming back from `away`). */
  #take(group: Group, first: boolean, signal?: AbortSignal): Promise<void> {
    if (this.#running < this.capacity && group.running < group.limit && group.queue.length === 0 && group.tenant.running < this.perCompany) {
      this.#enter(group);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const w: Waiter = { group, grant: resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = group.queue.indexOf(w);
          if (i < 0) return;
          group.queue.splice(i, 1);
          this.#waiting--;
          this.#forget(group);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      if (first) group.queue.unshift(w);
      else group.queue.push(w);
      this.#waiting++;
      const tenant = group.tenant;
      if (!group.queued) {
        group.queued = true;
        tenant.ring.push(group);
      }
      if (!tenant.queued) {
        tenant.queued = true;
        this.#ring.push(tenant);
      }
      this.#pump();
    });
  }

  #enter(group: Group): void {
    this.#running++;
    group.running++;
    group.tenant.running++;
    if (this.#running > this.#peak) this.#peak = this.#running;
  }

  #leave(group: Group): void {
    this.#running--;
    group.running--;
    group.tenant.running--;
    this.#pump();
    this.#forget(group);
  }

  /** Hands free places out: to calls, one company's turn at a time, then to spare requests. */
  #pump(): void {
    this.#pumpCalls();
    // No call can take a free place now: spare requests may, up to their capacity.
    while (this.#spares.length > 0 && this.#running < this.spareCapacity) {
      const w = this.#spares.shift()!;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      this.#enterSpare();
      w.grant();
    }
  }

  #pumpCalls(): void {
    while (this.#running < this.capacity && this.#ring.length > 0) {
      const w = this.#nextWaiter();
      if (!w) return;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      this.#waiting--;
      this.#enter(w.group!);
      w.grant();
    }
  }

  /** The first call of the next company in turn whose next group may start one; null when none may. */
  #nextWaiter(): Waiter | null {
    for (let seen = 0; seen < this.#ring.length; ) {
      if (this.#next >= this.#ring.length) this.#next = 0;
      const tenant = this.#ring[this.#next]!;
      const w = this.#fromTenant(tenant);
      if (tenant.ring.length === 0) {
        // Nothing left waiting in this company: out of the ring (the next one moves into its place).
        tenant.queued = false;
        this.#ring.splice(this.#next, 1);
        if (w) return w;
        continue;
      }
      this.#next++;
      if (w) return w;
      seen++;
    }
    return null;
  }

  #fromTenant(tenant: Tenant): Waiter | null {
    if (tenant.running >= this.perCompany) return null;
    const out = (i: number) => {
      tenant.ring[i]!.queued = false;
      tenant.ring.splice(i, 1);
    };
    for (let seen = 0; seen < tenant.ring.length; ) {
      if (tenant.next >= tenant.ring.length) tenant.next = 0;
      const g = tenant.ring[tenant.next]!;
      if (g.queue.length === 0) {
        out(tenant.next);
        continue;
      }
      if (g.running < g.limit) {
        const w = g.queue.shift()!;
        if (g.queue.length === 0) out(tenant.next);
        else tenant.next++;
        return w;
      }
      tenant.next++;
      seen++;
    }
    return null;
  }

  /** Drops a group (and its company) that has nothing running or waiting. */
  #forget(group: Group): void {
    if (group.running > 0 || group.queue.length > 0 || this.#groups.get(group.key) !== group) return;
    this.#groups.delete(group.key);
    const tenant = group.tenant;
    if (group.queued) {
      group.queued = false;
      const i = tenant.ring.indexOf(group);
      tenant.ring.splice(i, 1);
      if (i < tenant.next) tenant.next--;
    }
    if (--tenant.groups > 0) return;
    this.#tenants.delete(tenant.id);
    if (tenant.queued) {
      tenant.queued = false;
      const j = this.#ring.indexOf(tenant);
      this.#ring.splice(j, 1);
      if (j < this.#next) this.#next--;
    }
  }
}

/** A place held: `leave` gives it back (once); `away` gives it back for a wait and `takeAgain` queues for it afterwards. */
function heldSlot(leave: () => void, takeAgain: () => Promise<void>): Slot {
  let held = true;
  const give = () => {
    if (!held) return;
    held = false;
    leave();
  };
  return {
    release: give,
    away: async <T>(wait: () => Promise<T>): Promise<T> => {
      give();
      try {
        return await wait();
      } finally {
        await takeAgain();
        held = true;
      }
    },
  };
}

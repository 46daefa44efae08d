/**
 * A model call's place among the calls in flight of its process (actors/fair-slots.ts hands
 * them out, fairly between companies). A call that has to wait for something other than the
 * model (a server asking it to slow down, credit held by other calls) gives its place back
 * for the wait and queues for it again afterwards, so waiting calls never keep other
 * companies' calls from running.
 */
export interface CallSlot {
  away<T>(wait: () => Promise<T>): Promise<T>;
}

/** No scheduler (the gateway's evaluations): waits are simply waited. */
export const NO_SLOT: CallSlot = { away: (wait) => wait() };

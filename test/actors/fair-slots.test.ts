import t from 'tap';
import { FairSlots, type Slot } from '../../actors/fair-slots.js';

/**
 * The places for model calls (actors/fair-slots.ts), by the order in which waiting calls get
 * them: round robin between companies, an agent's own cap, a call coming back from a wait
 * first in its company, a cancelled wait leaving the queue.
 */
const tick = () => new Promise((r) => setImmediate(r));

/** Queues calls and records the order in which they get a place. */
function recorder(slots: FairSlots) {
  const granted: string[] = [];
  const held = new Map<string, Slot>();
  const ask = (name: string, tenant: number, group = `agent-${tenant}`, groupLimit: number | null = null, signal?: AbortSignal) =>
    slots.acquire({ tenant, group, groupLimit }, signal).then((slot) => {
      granted.push(name);
      held.set(name, slot);
      return slot;
    });
  const release = async (name: string) => {
    held.get(name)!.release();
    await tick();
  };
  return { granted, held, ask, release };
}

t.test('a company with a backlog takes one turn like the others', async (t) => {
  const slots = new FairSlots(2);
  const r = recorder(slots);
  for (let i = 1; i <= 6; i++) void r.ask(`a${i}`, 1);
  await tick();
  void r.ask('b1', 2);
  void r.ask('b2', 2);
  void r.ask('c1', 3);
  await tick();
  t.same(r.granted, ['a1', 'a2'], 'the first two places at once');
  t.equal(slots.waiting, 7);
  for (const name of ['a1', 'a2', 'a3', 'b1', 'c1', 'a4', 'b2']) await r.release(name);
  t.same(r.granted, ['a1', 'a2', 'a3', 'b1', 'c1', 'a4', 'b2', 'a5', 'a6'], 'A, B, C in turn; B and C never behind A\'s backlog');
  t.equal(slots.peak, 2);
});

t.test("an agent at its own cap is skipped; its company's other agent and other companies go on", async (t) => {
  const slots = new FairSlots(3);
  const r = recorder(slots);
  void r.ask('capped1', 1, 'capped', 1);
  void r.ask('capped2', 1, 'capped', 1);
  void r.ask('capped3', 1, 'capped', 1);
  void r.ask('free1', 1, 'free', null);
  void r.ask('other1', 2);
  await tick();
  t.same(r.granted, ['capped1', 'free1', 'other1'], 'one call of the capped agent; the places go to the others');
  await r.release('other1');
  t.same(r.granted, ['capped1', 'free1', 'other1'], 'a free place stays free rather than exceed the cap');
  await r.release('capped1');
  t.same(r.granted, ['capped1', 'free1', 'other1', 'capped2']);
});

t.test('a call that waits elsewhere gives its place back and comes back first in its company', async (t) => {
  const slots = new FairSlots(1);
  const r = recorder(slots);
  const first = await r.ask('a1', 1);
  void r.ask('a2', 1);
  void r.ask('b1', 2);
  let resume!: () => void;
  const back = first.away(() => new Promise<void>((res) => (resume = res)));
  await tick();
  t.same(r.granted, ['a1', 'a2'], 'its place went to the next call while it waits');
  resume();
  await r.release('a2');
  t.same(r.granted, ['a1', 'a2', 'b1'], "B's turn comes first");
  await r.release('b1');
  await back;
  t.equal(slots.running, 1, 'then it has its place again, ahead of nothing else of A');
  first.release();
  t.equal(slots.running, 0);
  first.release();
  t.equal(slots.running, 0, 'releasing twice gives back one place');
});

t.test('a call cancelled while it waits leaves the queue', async (t) => {
  const slots = new FairSlots(1);
  const r = recorder(slots);
  await r.ask('a1', 1);
  const controller = new AbortController();
  const cancelled = r.ask('a2', 1, 'agent-1', null, controller.signal);
  void r.ask('a3', 1);
  controller.abort(new Error('taken over'));
  await t.rejects(cancelled, /taken over/);
  t.equal(slots.waiting, 1);
  await r.release('a1');
  t.same(r.granted, ['a1', 'a3']);
});

t.test('one company cannot take every place: another company\'s call starts at once', async (t) => {
  const slots = new FairSlots(32);
  t.equal(slots.perCompany, 30, '1/16 of the places is kept for the others');
  const r = recorder(slots);
  for (let i = 1; i <= 40; i++) void r.ask(`a${i}`, 1);
  await tick();
  t.equal(r.granted.length, 30, 'the burst takes 30 of 32 places');
  void r.ask('b1', 2);
  void r.ask('c1', 3);
  await tick();
  t.same(r.granted.slice(30), ['b1', 'c1'], 'the other companies start without waiting for the burst\'s calls to end');
  void r.ask('d1', 4);
  await tick();
  t.equal(r.granted.length, 32, 'with every place taken the next company waits');
  await r.release('a1');
  t.same(r.granted.slice(32), ['d1'], 'and has the first place that comes free, not the burst');
});

/** Spare requests (a replay's model calls) recorded like the calls. */
function spares(slots: FairSlots, r: ReturnType<typeof recorder>) {
  return (name: string, signal?: AbortSignal) =>
    slots.acquireSpare(signal).then((slot) => {
      r.granted.push(name);
      r.held.set(name, slot);
      return slot;
    });
}

t.test('a spare place is never taken past capacity − reserve: the reserve stays free for calls', async (t) => {
  const slots = new FairSlots(8);
  t.equal(slots.spareCapacity, 6, 'a quarter of 8 kept back');
  const r = recorder(slots);
  const spare = spares(slots, r);
  for (let i = 1; i <= 10; i++) void spare(`s${i}`);
  await tick();
  t.same(r.granted, ['s1', 's2', 's3', 's4', 's5', 's6'], 'six spare places at once, the others wait');
  t.equal(slots.running, 6);
  t.equal(slots.spareWaiting, 4);
  void r.ask('a1', 1);
  void r.ask('b1', 2);
  await tick();
  t.same(r.granted.slice(6), ['a1', 'b1'], 'calls start at once beside a full set of spare places');
  await r.release('a1');
  t.equal(r.granted.length, 8, 'a place a call gives back does not go to a spare request past its capacity');
  await r.release('s1');
  t.equal(r.granted.length, 8, 'nor one a spare request gives back while calls hold the rest: places taken by anyone count');
  await r.release('b1');
  t.same(r.granted.slice(8), ['s7'], 'below capacity − reserve again, the next spare request in order');
  t.equal(slots.running, 6);
  t.equal(slots.spareRunning, 6);
  t.equal(slots.peak, 8);
});

t.test('a spare request never takes a place while a call waits for it', async (t) => {
  const slots = new FairSlots(4);
  t.equal(slots.spareCapacity, 3);
  const r = recorder(slots);
  const spare = spares(slots, r);
  for (let i = 1; i <= 4; i++) void r.ask(`a${i}`, 1);
  await tick();
  void spare('s1');
  void r.ask('a5', 1);
  void r.ask('b1', 2);
  await tick();
  t.same(r.granted, ['a1', 'a2', 'a3', 'a4'], 'every place taken: everyone waits');
  await r.release('a1');
  await r.release('a2');
  t.same(r.granted.slice(4), ['a5', 'b1'], 'the places that come free go to the waiting calls, though the spare request asked first');
  await r.release('a3');
  await r.release('a4');
  t.same(r.granted.slice(6), ['s1'], 'then, with no call waiting and places below capacity − reserve, to the spare request');
});

t.test('spare requests are served in arrival order; a call held by its own cap does not keep them waiting', async (t) => {
  const slots = new FairSlots(4);
  const r = recorder(slots);
  const spare = spares(slots, r);
  void r.ask('capped1', 1, 'capped', 1);
  void r.ask('capped2', 1, 'capped', 1);
  for (const name of ['s1', 's2', 's3', 's4']) void spare(name);
  await tick();
  t.same(r.granted, ['capped1', 's1', 's2'], 'the capped call waits for its own agent, not for a place: two spare places go, up to 3 in all');
  t.equal(slots.waiting, 1);
  await r.release('s1');
  t.same(r.granted.slice(3), ['s3'], 'first come, first served');
  await r.release('capped1');
  t.same(r.granted.slice(4), ['capped2'], 'the capped agent\'s next call gets its place');
  await r.release('s2');
  await r.release('s3');
  t.same(r.granted.slice(5), ['s4']);
});

t.test('a spare request cancelled while it waits leaves the queue; one away comes back first', async (t) => {
  const slots = new FairSlots(2);
  t.equal(slots.spareCapacity, 1, 'with two places one is kept for calls');
  const r = recorder(slots);
  const spare = spares(slots, r);
  const first = await spare('s1');
  const controller = new AbortController();
  const cancelled = spare('s2', controller.signal);
  void spare('s3');
  controller.abort(new Error('replay stopped'));
  await t.rejects(cancelled, /replay stopped/);
  t.equal(slots.spareWaiting, 1);
  let resume!: () => void;
  const back = first.away(() => new Promise<void>((res) => (resume = res)));
  await tick();
  t.same(r.granted, ['s1', 's3'], 'its place went to the next spare request while it waits');
  void spare('s4');
  resume();
  await tick();
  await r.release('s3');
  await back;
  t.same(r.granted, ['s1', 's3'], 'then it has its place again, ahead of s4');
  t.equal(slots.spareRunning, 1);
  first.release();
  await tick();
  t.same(r.granted, ['s1', 's3', 's4']);
  first.release();
  t.equal(slots.running, 1, 'releasing twice gives back one place');
});

t.test('with a single place, replays share it', async (t) => {
  const slots = new FairSlots(1);
  t.equal(slots.spareCapacity, 1);
  const r = recorder(slots);
  const spare = spares(slots, r);
  void spare('s1');
  void spare('s2');
  void r.ask('a1', 1);
  await tick();
  await r.release('s1');
  t.same(r.granted, ['s1', 'a1'], 'the call goes before the waiting spare request');
  await r.release('a1');
  t.same(r.granted, ['s1', 'a1', 's2']);
});

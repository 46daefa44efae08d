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

import t from 'tap';
import { FairQueue } from '../../gateway/knowledge/fair-queue.js';

// The ingestion queue (gateway/knowledge/fair-queue.ts): one queue per company, taken round-robin.
const drain = <K, T>(q: FairQueue<K, T>, eligible?: (key: K) => boolean) => {
  const out: T[] = [];
  for (let next = q.take(eligible); next; next = q.take(eligible)) out.push(next.item);
  return out;
};

t.test('a company with many items waiting delays another by one turn, not by all of them', async (t) => {
  const q = new FairQueue<string, string>();
  for (let i = 0; i < 5; i++) q.push('a', `a${i}`);
  q.push('b', 'b0');
  q.push('c', 'c0');
  q.push('b', 'b1');
  t.equal(q.size, 8);
  t.same(drain(q), ['a0', 'b0', 'c0', 'a1', 'b1', 'a2', 'a3', 'a4']);
  t.equal(q.size, 0);
});

t.test('a company arriving while others are served waits a full turn, no more', async (t) => {
  const q = new FairQueue<string, string>();
  q.push('a', 'a0');
  q.push('a', 'a1');
  q.push('b', 'b0');
  q.push('b', 'b1');
  t.equal(q.take()?.item, 'a0');
  q.push('c', 'c0');
  t.same(drain(q), ['b0', 'a1', 'c0', 'b1']);
});

t.test('companies at their limit are skipped, their turn kept', async (t) => {
  const q = new FairQueue<string, string>();
  for (const [k, v] of [['a', 'a0'], ['a', 'a1'], ['b', 'b0'], ['b', 'b1']]) q.push(k!, v!);
  t.same(drain(q, (k) => k !== 'a'), ['b0', 'b1'], 'only b may go now');
  t.same(drain(q), ['a0', 'a1'], 'a is served once it may');
});

t.test('an item given up while it waits is removed', async (t) => {
  const q = new FairQueue<string, string>();
  q.push('a', 'a0');
  q.push('b', 'b0');
  q.push('c', 'c0');
  t.ok(q.remove('b', 'b0'));
  t.notOk(q.remove('b', 'b0'), 'not twice');
  t.same(drain(q), ['a0', 'c0']);
  q.push('a', 'x');
  t.same(q.clear(), ['x']);
  t.equal(q.take(), undefined);
});

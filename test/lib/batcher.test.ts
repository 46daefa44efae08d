import t from 'tap';
import { Batcher } from '../../lib/batcher.js';

/** Group commit (lib/batcher.ts): which requests each flush gets. */
t.test('fairBy: a key with many requests waiting takes one place per turn in each batch', async (t) => {
  const batches: string[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const batcher = new Batcher<{ company: string; n: number }, void>(
    async (reqs) => {
      batches.push(reqs.map((r) => `${r.company}${r.n}`));
      if (batches.length === 1) await gate;
      return reqs.map(() => undefined);
    },
    { maxBatch: 4, concurrency: 1, fairBy: (r) => r.company },
  );
  const done = [batcher.submit({ company: 'a', n: 0 })];
  // While the first flush runs, A queues a backlog, then B and C one request each.
  for (let n = 1; n <= 8; n++) done.push(batcher.submit({ company: 'a', n }));
  done.push(batcher.submit({ company: 'b', n: 1 }), batcher.submit({ company: 'c', n: 1 }));
  t.equal(batcher.waiting, 10);
  release();
  await Promise.all(done);
  t.same(batches, [['a0'], ['a1', 'b1', 'c1', 'a2'], ['a3', 'a4', 'a5', 'a6'], ['a7', 'a8']], "B and C ride in the next batch, A's order is kept");
});

t.test('without fairBy: the oldest requests first', async (t) => {
  const batches: number[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const batcher = new Batcher<number, number>(
    async (reqs) => {
      batches.push(reqs);
      if (batches.length === 1) await gate;
      return reqs.map((r) => r * 2);
    },
    { maxBatch: 3, concurrency: 1 },
  );
  const first = batcher.submit(0);
  const rest = [1, 2, 3, 4].map((n) => batcher.submit(n));
  release();
  t.same(await Promise.all([first, ...rest]), [0, 2, 4, 6, 8]);
  t.same(batches, [[0], [1, 2, 3], [4]]);
});

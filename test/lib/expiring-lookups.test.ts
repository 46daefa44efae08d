import t from 'tap';
import { expiringLookups } from '../../lib/expiring-lookups.js';

/**
 * What a change notice relies on (actors/agents/change-notices.ts): forgetting a key drops
 * its kept value, and a load of it under way when the notice came is not kept (it may have
 * read what the change replaced), while other keys stay.
 */
const deferred = <V>() => {
  let resolve!: (v: V) => void;
  const promise = new Promise<V>((r) => (resolve = r));
  return { promise, resolve };
};

t.test('a kept value is served until forgotten, then loaded again', async (t) => {
  const lookup = expiringLookups<string, string>(60_000, 10, Date.now);
  let loads = 0;
  const load = (v: string) => async () => (loads++, v);
  t.equal(await lookup('1:7', load('old')), 'old');
  t.equal(await lookup('1:7', load('new')), 'old', 'kept');
  t.equal(await lookup('2:7', load('other')), 'other');
  lookup.forget((k) => k.startsWith('1:'));
  t.equal(await lookup('1:7', load('new')), 'new', 'loaded again after forget');
  t.equal(await lookup('2:7', load('changed')), 'other', "another company's entry stays");
  lookup.forget();
  t.equal(await lookup('2:7', load('changed')), 'changed', 'forget() drops everything');
  t.equal(loads, 4);
});

t.test('a load under way when its key is forgotten is not kept, and the next caller loads afresh', async (t) => {
  const lookup = expiringLookups<string, string>(60_000, 10, Date.now);
  const slow = deferred<string>();
  const stale = lookup('1:7', () => slow.promise);
  lookup.forget((k) => k === '1:7');
  const fresh = lookup('1:7', async () => 'new');
  t.equal(await fresh, 'new', 'not joined to the load that began before the change');
  slow.resolve('old');
  t.equal(await stale, 'old', 'its own caller still gets it');
  t.equal(await lookup('1:7', async () => 'newer'), 'new', 'the stale result did not replace the fresh one');
});

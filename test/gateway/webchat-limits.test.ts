import t from 'tap';
import { addressKey, SocketSlots, TokenBuckets } from '../../gateway/webchat/limits.js';

/** The webchat's in-memory limits on their own: socket slots, message buckets, address keys. */

t.test('socket slots: a total cap and a per-address cap; a release frees exactly one slot', async (t) => {
  const slots = new SocketSlots(3, 2);
  const a1 = slots.take('a');
  const a2 = slots.take('a');
  t.ok(a1.ok && a2.ok);
  t.same(slots.take('a'), { ok: false, cap: 'perIp' }, 'a third from one address');
  const b1 = slots.take('b');
  t.ok(b1.ok);
  t.same(slots.take('c'), { ok: false, cap: 'total' }, 'the process is full, whoever asks');
  if (!a1.ok) return;
  a1.release();
  a1.release();
  t.equal(slots.total, 2, 'a second release of the same slot frees nothing more');
  t.ok(slots.take('c').ok, 'the freed slot is taken');
  t.same(slots.take('a'), { ok: false, cap: 'total' });
});

t.test('token buckets: a burst of the rate, refilled over a minute; idle keys are dropped', async (t) => {
  let now = 1_000_000;
  const buckets = new TokenBuckets(3, () => now);
  for (let i = 0; i < 3; i++) {
    t.equal(buckets.waitMs('v'), 0);
    buckets.take('v');
  }
  t.equal(buckets.waitMs('v'), 20_000, 'the next token in 20 s (3 a minute)');
  t.equal(buckets.waitMs('w'), 0, 'keys are independent');
  now += 19_000;
  t.equal(buckets.waitMs('v'), 1_000);
  now += 1_000;
  t.equal(buckets.waitMs('v'), 0);
  buckets.take('v');
  t.equal(buckets.waitMs('v'), 20_000, 'a spent token is not taken twice');

  // Many keys, each used once: after a refill period they are all gone.
  for (let i = 0; i < 10_000; i++) buckets.take(`k${i}`);
  t.equal(buckets.size, 10_001);
  now += 60_000;
  buckets.take('fresh');
  t.equal(buckets.size, 1, 'only the key just used is held');
  t.equal(buckets.waitMs('v'), 0, 'a dropped key starts with a full bucket');
});

t.test('address keys: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 per /64', async (t) => {
  t.equal(addressKey('203.0.113.7'), '203.0.113.7');
  t.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
  t.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  t.equal(addressKey('2001:0db8:0001:0002::9'), '2001:db8:1:2::/64', 'leading zeros');
  t.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64', 'a compressed address');
  t.equal(addressKey('2001:db8:0:0:ffff::1'), addressKey('2001:db8::2'), 'one /64');
  t.not(addressKey('2001:db8:0:1::1'), addressKey('2001:db8::1'), 'another /64');
  t.equal(addressKey('1::2:3:4:5:1.2.3.4'), '1:0:2:3::/64', 'an IPv4 tail stands for two groups');
  t.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone is left out');
  t.equal(addressKey(undefined), 'unknown');
});

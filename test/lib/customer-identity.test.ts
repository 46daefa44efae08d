import { createHmac } from 'node:crypto';
import t from 'tap';
import { identityVerifies, visitorContact } from '../../gateway/webchat/identity.js';
import { parseClientFrame } from '../../gateway/webchat/frames.js';
import { contactText } from '../../lib/leads.js';

/** The pure parts of "customers have names": what is kept of outside text, and what verifies. */
const secret = (s: string) => Buffer.from(s, 'utf8');
const hash = (id: string, key: string) => createHmac('sha256', key).update(id).digest('hex');

t.test('contact text: hostile characters out, bounded, never unstorable', async (t) => {
  t.equal(contactText('  Ann\u202e\u0007 Lee\n\u200b', 200), 'Ann Lee', 'bidi override, bell, newline and zero-width space gone');
  t.equal(contactText('\u0000Bob', 200), 'Bob', 'U+0000 (which PostgreSQL refuses) gone');
  t.equal(contactText('\ud800Eve', 200), '\ufffdEve', 'a lone surrogate becomes U+FFFD');
  t.equal(contactText('😀😀😀', 2), '😀😀', 'cut by characters, never inside a pair');
  t.equal(contactText(79001234567, 40), '79001234567', 'a phone sent as a number');
  // Plain ASCII names and phones are taken as they are; only what is already clean.
  t.equal(contactText('Ann Lee', 200), 'Ann Lee');
  t.equal(contactText('+7 900 123-45-67', 40), '+7 900 123-45-67');
  t.equal(contactText('Ann  Lee ', 200), 'Ann Lee', 'double and trailing spaces collapse');
  t.equal(contactText('Ann\tLee', 200), 'Ann Lee', 'a tab is a space');
  t.equal(contactText('a'.repeat(201), 200), 'a'.repeat(200), 'an ASCII name too long is cut');
  for (const v of [null, undefined, {}, [], ' \n\t ', true]) t.equal(contactText(v, 10), null, JSON.stringify(v) ?? 'undefined');
});

t.test('identity hash: HMAC-SHA256 of the id with the current secret, or the previous one during its grace', async (t) => {
  const secrets = { current: secret('new-secret'), previous: secret('old-secret'), previousValidUntil: 2_000 };
  const claim = (h: string, id = 'u-1') => ({ id, name: null, email: null, hash: h });
  t.ok(identityVerifies(claim(hash('u-1', 'new-secret')), secrets, 1_000));
  t.ok(identityVerifies(claim(hash('u-1', 'old-secret')), secrets, 1_000), 'the previous secret during its grace');
  t.notOk(identityVerifies(claim(hash('u-1', 'old-secret')), secrets, 3_000), 'not after it');
  t.notOk(identityVerifies(claim(hash('u-2', 'new-secret')), secrets, 1_000), "another id's hash");
  t.notOk(identityVerifies(claim(hash('u-1', 'new-secret').slice(0, 62) + '00'), secrets, 1_000), 'one byte off');
  t.notOk(identityVerifies(claim('ab'), secrets, 1_000), 'a short hash (no comparison of unequal lengths)');
});

t.test('frames: a bad identity never costs the visitor the hello; typed contact is unverified', async (t) => {
  const good = hash('u-1', 'k');
  t.match(parseClientFrame(JSON.stringify({ type: 'hello', identity: { id: 'u-1', name: ' Ann ', email: 'ann@x.test', hash: good.toUpperCase() } })), { type: 'hello', identity: { id: 'u-1', name: 'Ann', email: 'ann@x.test', hash: good } });
  for (const identity of [{ id: 'u-1' }, { id: '', hash: good }, { id: 'u-1', hash: 'xyz' }, 'u-1', { id: 'x'.repeat(201), hash: good }]) {
    t.match(parseClientFrame(JSON.stringify({ type: 'hello', identity })), { type: 'hello', identity: 'malformed' }, JSON.stringify(identity).slice(0, 60));
  }
  t.match(parseClientFrame(JSON.stringify({ type: 'hello', identity: { id: 7, email: 'not an email', hash: good } })), { identity: { id: '7', email: null } }, 'a numeric id is its digits; an email that is not one is dropped');
  t.throws(() => parseClientFrame(JSON.stringify({ type: 'identify', id: 'u-1' })), { code: 'VALIDATION_ERROR' }, 'an identify frame without a hash is refused');
  const msg = parseClientFrame(JSON.stringify({ type: 'message', clientMessageId: 'm-1', text: 'hi', contact: { name: 'Dan', email: 'dan@x.test', phone: '1' } }));
  t.match(msg, { contact: { name: 'Dan', email: 'dan@x.test' } });
  t.same(visitorContact(null, { name: 'Dan', email: 'dan@x.test' }), { name: 'Dan', email: 'dan@x.test', phone: null, source: 'customer' }, 'typed: a customer source');
  t.same(visitorContact({ id: 'u-1', name: 'Ann', email: null, hash: good }, { name: 'Dan', email: null }), { name: 'Ann', email: null, phone: null, source: 'verified', verifiedId: 'u-1' }, 'a verified identity wins over typed answers');
});

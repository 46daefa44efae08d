import t from 'tap';
import { SecretBox } from '../../lib/secrets.js';
import { formatUsd } from '../../lib/money.js';

t.test('SecretBox seals with the first key and opens with any', async (t) => {
  const oldKey = Buffer.alloc(32, 1);
  const newKey = Buffer.alloc(32, 2);
  const before = new SecretBox([oldKey]);
  const sealed = before.seal('helpdesk-token-123');
  t.notMatch(sealed, /helpdesk-token-123/, 'ciphertext does not contain the plain text');
  t.not(before.seal('helpdesk-token-123'), sealed, 'a fresh IV each time');
  const rotated = new SecretBox([newKey, oldKey]);
  t.equal(rotated.open(sealed), 'helpdesk-token-123', 'old values open after rotation');
  t.ok(rotated.isStale(sealed));
  t.notOk(rotated.isStale(rotated.seal('x')));
  t.throws(() => new SecretBox([newKey]).open(sealed), /unknown key/, 'a removed key no longer opens');
  const [v, id, iv, tag, body] = sealed.split('.');
  const tampered = [v, id, iv, tag, Buffer.from('zzzz').toString('base64url') + body].join('.');
  t.throws(() => before.open(tampered), 'tampering is detected');
});

t.test('formatUsd is exact and keeps two decimals at least', async (t) => {
  t.equal(formatUsd('5.000000'), '5.00');
  t.equal(formatUsd('-2.400000'), '-2.40');
  t.equal(formatUsd('-0.000450'), '-0.00045');
  t.equal(formatUsd('0.000000'), '0.00');
  t.equal(formatUsd('-0.000000'), '0.00');
  t.equal(formatUsd('123456789.123456'), '123456789.123456');
  t.throws(() => formatUsd('1e5'));
});

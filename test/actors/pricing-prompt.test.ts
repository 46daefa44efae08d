import t from 'tap';
import { costUsd, DEFAULT_MODEL_PRICING, FREE, pricingFor } from '../../lib/agents/pricing.js';
import { buildPrompt, estimateTokens, type HistoryMessage } from '../../lib/agents/prompt.js';

t.test('cost of a call: exact decimals, no floating point', async (t) => {
  const gpt4o = { inputUsdPerMTok: '2.50', outputUsdPerMTok: '10.00' };
  // 1,234 × 2.50 + 567 × 10.00 = 3,085 + 5,670 = 8,755 USD per million tokens
  t.equal(costUsd(1234, 567, gpt4o), '0.008755');
  t.equal(costUsd(0, 0, gpt4o), '0.000000');
  t.equal(costUsd(1_000_000, 0, gpt4o), '2.500000');
  t.equal(costUsd(1_000_000_000, 1_000_000_000, gpt4o), '12500.000000', 'large counts stay exact');
  t.equal(costUsd(Number.MAX_SAFE_INTEGER, 0, { inputUsdPerMTok: '1', outputUsdPerMTok: '0' }), '9007199254.740991');
  // 0.1 + 0.2 style traps: 3 tokens at 0.1 and 3 at 0.2 per token-million
  t.equal(costUsd(3, 3, { inputUsdPerMTok: '0.1', outputUsdPerMTok: '0.2' }), '0.000001', '0.0000009 rounds up');
});

t.test('rounding is half up to 6 decimals (the micro-dollar)', async (t) => {
  // 1,234 × 0.50 + 567 × 1.50 = 1,467.5 per million = 0.0014675 → 0.001468
  t.equal(costUsd(1234, 567, { inputUsdPerMTok: '0.50', outputUsdPerMTok: '1.50' }), '0.001468');
  t.equal(costUsd(1, 0, { inputUsdPerMTok: '0.5', outputUsdPerMTok: '0' }), '0.000001', 'exactly half → up');
  t.equal(costUsd(1, 0, { inputUsdPerMTok: '0.499999999', outputUsdPerMTok: '0' }), '0.000000', 'just below half → down');
  t.equal(costUsd(1, 0, { inputUsdPerMTok: '1.5', outputUsdPerMTok: '0' }), '0.000002');
  t.equal(costUsd(1, 0, { inputUsdPerMTok: '0.000000001', outputUsdPerMTok: '0' }), '0.000000', 'nine decimals accepted');
});

t.test('bad input is refused, not guessed', async (t) => {
  const p = { inputUsdPerMTok: '1', outputUsdPerMTok: '1' };
  t.throws(() => costUsd(-1, 0, p));
  t.throws(() => costUsd(1.5, 0, p));
  t.throws(() => costUsd(Number.NaN, 0, p));
  t.throws(() => costUsd(1, 1, { inputUsdPerMTok: '0.0000000001', outputUsdPerMTok: '0' }), 'more than 9 decimals');
  t.throws(() => costUsd(1, 1, { inputUsdPerMTok: '-1', outputUsdPerMTok: '0' }), 'negative price');
  t.throws(() => costUsd(1, 1, { inputUsdPerMTok: '1e3', outputUsdPerMTok: '0' }));
});

t.test('the price table, the per-agent override and unknown models', async (t) => {
  t.same(pricingFor('gpt-4o', null), { inputUsdPerMTok: '2.50', outputUsdPerMTok: '10.00' });
  t.same(pricingFor('gpt-4o-2024-08-06', null), DEFAULT_MODEL_PRICING['gpt-4o'], 'a dated snapshot is priced like its model');
  const override = { inputUsdPerMTok: '0.50', outputUsdPerMTok: '1.50' };
  t.same(pricingFor('gpt-4o', override), override, 'the agent override wins over the table');
  t.same(pricingFor('llama3:8b', override), override);
  t.same(pricingFor('llama3:8b', null), FREE, 'an unknown model is free');
  t.equal(costUsd(1234, 567, pricingFor('llama3:8b', null)), '0.000000');
  t.same(pricingFor('toString', null), FREE, 'no prototype keys');
  t.same(pricingFor('gpt-4o-mini', undefined), { inputUsdPerMTok: '0.15', outputUsdPerMTok: '0.60' });
  for (const [model, p] of Object.entries(DEFAULT_MODEL_PRICING)) {
    t.doesNotThrow(() => costUsd(1, 1, p), `${model}'s prices are valid decimals`);
  }
});

t.test('prompt: system prompt, knowledge passages, history, then the new message', async (t) => {
  const messages = buildPrompt({
    systemPrompt: 'You are the assistant of Acme.',
    passages: [
      { title: 'Opening hours', snippet: 'Open 9 am to 6 pm.' },
      { title: 'Delivery', snippet: 'We deliver in 2 days.' },
    ],
    history: [
      { role: 'customer', text: 'Hi, I am Ann' },
      { role: 'agent', text: 'Hello Ann!' },
      { role: 'system', text: 'internal' },
      { role: 'operator', text: 'Ann, your order shipped.' },
    ],
    message: 'When are you open?',
  });
  t.equal(messages[0]!.role, 'system');
  const system = messages[0]!.content;
  t.match(system, /^You answer a company's customers on its behalf\. The company's instructions:\n"""\nYou are the assistant of Acme\.\n"""/, "the company's prompt, framed as its instructions");
  const rules = system.indexOf('Service rules');
  t.ok(rules > system.indexOf('Acme') && rules < system.indexOf('[1]'), "the service's rules after the company's prompt, before the passages");
  t.match(system, /override the company's instructions/);
  t.match(system, /Answer only from the numbered knowledge base passages/);
  t.match(system, /call the tool `handoff_to_human` \(with a reason\)/);
  t.match(system, /Never promise an action/);
  t.match(system, /\[1\] Opening hours\nOpen 9 am to 6 pm\./);
  t.match(system, /\[2\] Delivery\nWe deliver in 2 days\./);
  t.ok(system.indexOf('[1]') < system.indexOf('[2]'), 'passages in rank order');
  t.same(messages.slice(1), [
    { role: 'user', content: 'Hi, I am Ann' },
    { role: 'assistant', content: 'Hello Ann!' },
    { role: 'assistant', content: '(human colleague) Ann, your order shipped.' },
    { role: 'user', content: 'When are you open?' },
  ]);
});

t.test('prompt: without system prompt or passages', async (t) => {
  const messages = buildPrompt({ systemPrompt: '   ', passages: [], history: [], message: 'hi' });
  t.equal(messages.length, 2);
  t.match(messages[0]!.content, /"""\nYou are a helpful customer-support assistant\. Answer briefly\.\n"""/, 'a default for the company\'s instructions');
  t.notMatch(messages[0]!.content, /Knowledge base passages/);
  t.match(messages[0]!.content, /Answer only from the company's instructions above/, 'without a knowledge base, the instructions are the only source');
  t.notMatch(messages[0]!.content, /nothing relevant/);
  const withBase = buildPrompt({ systemPrompt: 'S', passages: [], hasKnowledgeBase: true, history: [], message: 'hi' });
  t.match(withBase[0]!.content, /The knowledge base has nothing relevant to this message/, 'a base with no passage for the message: no facts, hand over');
  t.match(withBase[0]!.content, /Answer only from the numbered knowledge base passages/);
  t.same(messages[1], { role: 'user', content: 'hi' });
});

t.test('prompt: the history is bounded by the token budget, newest kept', async (t) => {
  const history: HistoryMessage[] = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? 'customer' : 'agent', text: `message number ${i} `.padEnd(40, '.') }));
  const each = estimateTokens(history[0]!.text);
  t.equal(each, 14, '40 characters ≈ 10 tokens + 4 overhead');
  const messages = buildPrompt({ systemPrompt: 'S', passages: [], history, message: 'new', historyTokenBudget: each * 3 + 1 });
  t.same(
    messages.slice(1, -1).map((m) => m.content.slice(0, 16)),
    ['message number 7', 'message number 8', 'message number 9'],
    'the three newest, in order',
  );
  t.same(messages.at(-1), { role: 'user', content: 'new' });
  const none = buildPrompt({ systemPrompt: 'S', passages: [], history, message: 'new', historyTokenBudget: 0 });
  t.equal(none.length, 2, 'budget 0: no history');
  const all = buildPrompt({ systemPrompt: 'S', passages: [], history, message: 'new', historyTokenBudget: 10_000 });
  t.equal(all.length, 12, 'everything fits');
  // A long old message does not let older ones slip in around it: history stays contiguous.
  const gap = buildPrompt({
    systemPrompt: 'S',
    passages: [],
    history: [{ role: 'customer', text: 'old' }, { role: 'agent', text: 'x'.repeat(400) }, { role: 'customer', text: 'recent' }],
    message: 'new',
    historyTokenBudget: 50,
  });
  t.same(gap.slice(1).map((m) => m.content), ['recent', 'new']);
});

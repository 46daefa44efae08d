import t from 'tap';
import { groupNoAnswers, MAX_GAP_CONVERSATIONS, MAX_GAP_QUESTIONS, questionSimilarity, sameWord, subjectWords, type NoAnswer } from '../../lib/knowledge/gaps.js';

// Knowledge gaps (lib/knowledge/gaps.ts): the unanswered questions of a base, the same
// question however it was typed in one group, different questions apart, bounded work.

const T0 = Date.parse('2026-03-01T10:00:00Z');
let minute = 0;
/** No-answers in the order given, each a minute after the one before (the last is the newest). */
function asked(questions: (string | [string, number])[]): NoAnswer[] {
  return questions.map((q) => {
    const [question, conversationId] = Array.isArray(q) ? q : [q, ++minute];
    return { conversationId, at: new Date(T0 + ++minute * 60_000), question, best: null };
  });
}
const questionsOf = (gaps: { question: string; count: number }[]) => gaps.map((g) => [g.question, g.count]);

t.test('the same question with another case, punctuation, spacing, word order, filler words or a typo is one gap', async (t) => {
  const gaps = groupNoAnswers(
    asked(['capital of peru?', 'What is the capital of Peru', 'whats the capitol of peru', 'Peru — capital?', '  what   is the CAPITAL of peru!!  ', 'do you sell tea', 'do you ship to japan']),
  );
  t.same(questionsOf(gaps), [['what is the CAPITAL of peru!!', 5], ['do you ship to japan', 1], ['do you sell tea', 1]], 'five phrasings of one question (shown as the most frequent one was last typed); tea and Japan apart');
});

t.test("a group's question is its most frequent phrasing; a tie goes to the newest", async (t) => {
  const [frequent] = groupNoAnswers(asked(['Capital of Peru?', 'what is the capital of peru', 'capital of peru', 'What is the capital of Peru?']));
  t.equal(frequent!.question, 'What is the capital of Peru?', 'two of each phrasing (case and punctuation aside): the newest of the newest phrasing, as typed');
  const [tie] = groupNoAnswers(asked(['capital of peru', 'peru capital', 'Capital of Peru!']));
  t.equal(tie!.question, 'Capital of Peru!', '"capital of peru" twice beats "peru capital" once; shown as last typed');
  const [once] = groupNoAnswers(asked(['peru capital', 'capital of peru']));
  t.equal(once!.question, 'capital of peru', 'once each: the newest');
});

t.test('different questions stay apart, short words must be equal', async (t) => {
  const pairs = [
    ['do you sell tea', 'do you sell coffee'],
    ['do you ship to japan', 'do you have a shop in japan'],
    ['sell green tea', 'sell black tea'],
    ['how do I reset my password', 'how do I change my email'],
    ['Сколько стоит доставка в Казахстан?', 'Сколько стоит доставка в Беларусь?'],
    ['where is my order', 'where is my parcel'],
    ['international shipping', 'internet shop'],
  ];
  for (const [a, b] of pairs) t.equal(groupNoAnswers(asked([a!, b!])).length, 2, `${a} / ${b}`);
});

t.test('Russian: Cyrillic, ё as е, inflections and word order', async (t) => {
  const gaps = groupNoAnswers(
    asked(['Где мой заказ?', 'где заказ', 'Сколько стоит доставка в Казахстан?', 'доставка в казахстан сколько стоит', 'Сколько стоит доставки в Казахстан', 'Можно ли оплатить ёлку картой?', 'можно оплатить елку картой']),
  );
  t.same(questionsOf(gaps), [['Сколько стоит доставки в Казахстан', 3], ['можно оплатить елку картой', 2], ['где заказ', 2]]);
});

t.test('count, newest time, distinct conversations newest first (capped), the best passage of the newest question', async (t) => {
  const rows = asked([['do you ship to japan', 7], ['Do you ship to Japan?', 8], ['do you ship to japan', 7], ['ship to japan?', 9]]);
  rows[3]!.best = { documentId: 3, chunkId: 30, title: 'Delivery', confidence: 0.31 };
  rows[2]!.best = { documentId: 4, chunkId: 40, title: 'Returns', confidence: 0.2 };
  // Shuffled: the reader's order is not relied on for the figures.
  const [gap] = groupNoAnswers([rows[2]!, rows[0]!, rows[3]!, rows[1]!]);
  t.same(gap, { question: 'do you ship to japan', count: 4, lastAt: rows[3]!.at, conversationIds: [9, 7, 8], bestMatch: rows[3]!.best });

  const many = asked(Array.from({ length: 30 }, (_, i) => [`do you ship to japan`, 100 + i] as [string, number]));
  const [big] = groupNoAnswers(many);
  t.equal(big!.count, 30);
  t.equal(big!.conversationIds.length, MAX_GAP_CONVERSATIONS);
  t.same(big!.conversationIds.slice(0, 3), [129, 128, 127], 'newest first');
});

t.test('most frequent first; equal counts: the most recently asked first', async (t) => {
  const gaps = groupNoAnswers(asked(['do you sell tea', 'do you ship to japan', 'Do you sell tea?', 'gift cards?', 'are there gift cards', 'opening hours on sunday']));
  t.same(questionsOf(gaps), [['are there gift cards', 2], ['Do you sell tea?', 2], ['opening hours on sunday', 1], ['do you ship to japan', 1]]);
});

t.test('questions of stop words alone are grouped only with the same words', async (t) => {
  const gaps = groupNoAnswers(asked(['what?', 'What?', 'how?']));
  t.same(questionsOf(gaps), [['What?', 2], ['how?', 1]]);
});

t.test('the parts', async (t) => {
  t.same(subjectWords("What's the capital of Peru? Where's it?"), ['capital', 'peru']);
  t.same(subjectWords('Ёлка и ёж'), ['елка', 'еж']);
  t.ok(sameWord('capital', 'capitol'), 'a typo');
  t.ok(sameWord('delivery', 'delivered'), 'an inflection');
  t.ok(sameWord('доставка', 'доставкой'), 'a Russian inflection');
  t.ok(sameWord('recieve', 'receive'), 'two letters swapped');
  t.notOk(sameWord('ship', 'shop'), 'short words must be equal');
  t.notOk(sameWord('international', 'internet'));
  t.equal(questionSimilarity(['sell', 'green', 'tea'], ['sell', 'tea']), 0.8);
  t.equal(questionSimilarity([], ['tea']), 0);
});

t.test('bounded: the most no-answers a request reads are grouped in well under a second of CPU, whatever they hold', async (t) => {
  const words = 'order parcel refund delivery japan tea coffee gift card account password email invoice price discount warranty repair store hours payment'.split(' ');
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = () => words[Math.floor(rnd() * words.length)]!;
  const typo = (w: string) => (rnd() < 0.3 && w.length > 5 ? w.slice(0, 2) + w[3] + w[2] + w.slice(4) : w);
  const rows: NoAnswer[] = Array.from({ length: MAX_GAP_QUESTIONS }, (_, i) => ({
    conversationId: i + 1,
    at: new Date(T0 + i * 1000),
    question: Array.from({ length: 2 + Math.floor(rnd() * 6) }, () => typo(pick())).join(' ') + ` q${i % 997}`,
    best: null,
  }));
  // Every question sharing the same few words: the worst case for candidate lookup.
  const same = Array.from({ length: MAX_GAP_QUESTIONS }, (_, i) => ({ conversationId: i + 1, at: new Date(T0 + i * 1000), question: `order parcel refund delivery ${'x'.repeat(5)}${i}`, best: null }));
  // Long pasted texts: words past the first few are not compared.
  const long = Array.from({ length: MAX_GAP_QUESTIONS }, (_, i) => ({ conversationId: i + 1, at: new Date(T0 + i * 1000), question: `${'lorem ipsum dolor sit amet consectetur '.repeat(80)}${i}`, best: null }));
  for (const [name, set] of [['random', rows], ['one shared subject', same], ['long texts', long]] as const) {
    // CPU time, not wall time: other test files run beside this one.
    const cpu = process.cpuUsage();
    const gaps = groupNoAnswers(set);
    const used = process.cpuUsage(cpu);
    const ms = (used.user + used.system) / 1000;
    t.ok(ms < 1000, `${name}: ${MAX_GAP_QUESTIONS} questions into ${gaps.length} gaps in ${ms.toFixed(0)} ms of CPU`);
    t.equal(gaps.reduce((n, g) => n + g.count, 0), MAX_GAP_QUESTIONS, `${name}: every question is in one gap`);
  }
});

import t from 'tap';
import { expandQuestion, MAX_EXPANSIONS, sameWord } from '../../lib/knowledge/expansion.js';
import { fuse, searchText, type LexicalCandidate } from '../../lib/knowledge/search.js';
import { withoutStopWords } from '../../lib/knowledge/stop-words.js';
import { SYNONYM_GROUPS } from '../../lib/knowledge/synonyms.js';

// Synonyms of a customer's words (lib/knowledge/expansion.ts) and the fusion of a misspelt question.
const synonymsOf = (question: string, word: string) => expandQuestion(searchText(question)).filter((e) => e.word === word).map((e) => e.synonym);

t.test('a word and its forms match a listed word; different words do not', async (t) => {
  t.ok(sameWord('rejected', 'reject'), 'English ending');
  t.ok(sameWord('cards', 'card'));
  t.ok(sameWord('разбитую', 'разбитая'), 'Russian case ending');
  t.ok(sameWord('гарантию', 'гарантия'));
  t.notOk(sameWord('freeze', 'free'), 'a longer word is not a form of a shorter one');
  t.notOk(sameWord('cart', 'card'));
  t.notOk(sameWord('да', 'дата'));
  t.notOk(sameWord('ремонт', 'ремень'), 'Cyrillic needs a shared stem of 4 letters or more');
});

t.test('a question gets the synonyms of its words, phrases matched whole', async (t) => {
  t.ok(synonymsOf('how long is the guarantee on my machine?', 'guarantee').includes('warranty'));
  t.ok(synonymsOf('I need a receipt', 'receipt').includes('invoice'));
  t.ok(synonymsOf('my credit card keeps getting rejected', 'rejected').includes('declined'));
  t.ok(synonymsOf('пришла разбитая чашка', 'разбитая').includes('повреждения'));
  t.ok(synonymsOf('когда вернут деньги', 'деньги').includes('денег'), 'an irregular form is listed');
  const money = expandQuestion(searchText('when do I get my money back?'));
  t.ok(money.some((e) => e.word === 'money' && e.synonym === 'refund') && money.some((e) => e.word === 'back' && e.synonym === 'refund'), 'a phrase gives its synonyms to each of its words');
  t.notOk(synonymsOf('I hurt my back', 'back').includes('refund'), 'a word of a phrase alone brings nothing');
  t.same(expandQuestion(searchText('purple umbrella')), [], 'words of no group bring nothing');
  t.ok(synonymsOf('the boots pinch, can I bring them back?', 'bring').includes('return'), 'a pronoun inside a phrasal verb ("bring them back")');
  t.ok(synonymsOf('can I send these back?', 'send').includes('return'));
  t.notOk(synonymsOf('bring the kids back to school', 'bring').includes('return'), 'one pronoun at most, not any word');
  t.ok(synonymsOf('how much is a haircut?', 'haircut').length > 0, 'the words of services and places (lib/knowledge/synonyms-services.ts)');
  t.ok(synonymsOf('можно записаться на субботу?', 'записаться').length > 0);
  t.same(expandQuestion(''), []);
  t.notOk(expandQuestion(searchText('guarantee')).some((e) => e.synonym.includes(' ')), 'synonyms are single words');
  t.notOk(expandQuestion(searchText('guarantee')).some((e) => e.synonym === e.word), 'a word is not its own synonym');
});

t.test('a long message brings at most MAX_EXPANSIONS pairs', async (t) => {
  const long = 'order delivery refund payment card subscription warranty repair account password delete data cancel pause newsletter email phone contact tracking parcel exchange discount '.repeat(20);
  const pairs = expandQuestion(searchText(long));
  t.equal(pairs.length, MAX_EXPANSIONS);
  t.equal(new Set(pairs.map((p) => `${p.word} ${p.synonym}`)).size, pairs.length, 'no pair twice');
});

t.test('the list: a phrase stays a phrase once stop words are out; every group keeps two entries', async (t) => {
  for (const group of SYNONYM_GROUPS) {
    // "не работает" would become "работает", "get here" every "here".
    for (const entry of group.filter((e) => e.includes(' '))) t.ok(withoutStopWords(entry).includes(' '), `"${entry}" keeps two words: "${withoutStopWords(entry)}"`);
    const kept = new Set(group.map(withoutStopWords).filter((e) => e !== ''));
    t.ok(kept.size >= 2, `group ${group[0]}: ${[...kept].join(', ')}`);
  }
});

t.test('fusion: when a word is misspelt, the corrected list decides between equals', async (t) => {
  const candidate = (chunkId: number, fulltextRank: number, trigramRank: number, fuzzy: boolean): LexicalCandidate => ({ chunkId, documentId: 1, fulltextRank, trigramRank, fuzzy, relevance: 0.5, matches: [] });
  // A ranks first as written, B first as corrected (B holds the misspelt word's neighbour).
  const fused = fuse([candidate(1, 1, 2, false), candidate(2, 2, 1, true)], null);
  t.same(fused.map((f) => f.chunkId), [2, 1]);
  t.same(fused[0]!.matchedBy, ['fulltext', 'trigram']);
  const written = fuse([candidate(1, 1, 2, false), candidate(2, 2, 1, true)], null, { fulltext: true, trigram: false });
  t.same(written.map((f) => f.chunkId), [1, 2], 'full text alone: the written question decides');
});

import t from 'tap';
import { clarifyText, decideBuiltin, outOfScopeReply, pickedOption } from '../../lib/agents/answer-decision.js';
import type { AnswerEvidence, Passage } from '../../lib/knowledge/answer-evidence.js';
import { combinedConfidence, namesIn, passageConfidences, type QuestionFacts } from '../../lib/knowledge/confidence.js';
import { detectLanguage, documentLanguage } from '../../lib/knowledge/language.js';

const passage = (documentId: number, confidence: number, semantic: number | null = null): Passage => ({
  documentId, chunkId: documentId * 10, title: `Article ${documentId}`, heading: '', content: '…', relevance: confidence, confidence, score: 0, matchedBy: ['fulltext'],
  lexical: confidence, semantic,
});
const evidence = (passages: Passage[], known = 1): AnswerEvidence => ({ passages, known, semantic: true });

t.test('the decision table', async (t) => {
  t.match(decideBuiltin(evidence([passage(1, 0.8), passage(2, 0.3)]), 0.35), { kind: 'answer', passage: { documentId: 1 } }, 'a sure passage with no close rival is the answer');
  t.match(decideBuiltin(evidence([passage(1, 0.45), passage(2, 0.42), passage(3, 0.4)]), 0.35), { kind: 'clarify', options: [{ documentId: 1 }, { documentId: 2 }, { documentId: 3 }] }, 'close passages of three articles, none sure: ask');
  t.match(decideBuiltin(evidence([passage(1, 0.45), passage(1, 0.44), passage(2, 0.2)]), 0.35), { kind: 'answer' }, 'two passages of one article are no choice to offer');
  t.match(decideBuiltin(evidence([passage(1, 0.7), passage(2, 0.68)]), 0.35), { kind: 'answer' }, 'a sure best passage is answered even with a close rival');
  t.match(decideBuiltin(evidence([passage(1, 0.3), passage(2, 0.29)]), 0.35), { kind: 'clarify' }, 'below the threshold but close: ask rather than hand over');
  t.match(decideBuiltin(evidence([passage(1, 0.1)], 0), 0.35), { kind: 'out_of_scope' }, 'nothing of the question in the base, nothing near: out of scope');
  t.match(decideBuiltin(evidence([passage(1, 0.1, 0.4)], 0), 0.35), { kind: 'no_answer' }, 'near in meaning: about the business');
  t.match(decideBuiltin(evidence([passage(1, 0.25)], 1), 0.35), { kind: 'no_answer' }, "the base knows the question's words but nothing answers: no answer");
  t.match(decideBuiltin(evidence([], 0), 0.35), { kind: 'out_of_scope', best: null });
  t.match(decideBuiltin(evidence([], 0.5), 0.35), { kind: 'no_answer' }, 'half the question known (or of shops and services): about the business');
});

t.test('a reply to a clarify question picks an option by number or title', async (t) => {
  const options = [{ documentId: 1, chunkId: 10, title: 'Returns' }, { documentId: 2, chunkId: 20, title: 'Exchanges' }];
  for (const text of ['2', '2.', ' #2 ', 'option 2', 'вариант 2', 'exchanges', 'Exchanges please']) t.equal(pickedOption(text, options)?.documentId, 2, JSON.stringify(text));
  for (const text of ['3', '0', 'what about shipping?', '', 're']) t.equal(pickedOption(text, options), null, JSON.stringify(text));
  t.equal(clarifyText(options, 'how long?'), 'Do you mean:\n1. Returns\n2. Exchanges\nReply with the number or the name.');
  t.match(clarifyText(options, 'сколько дней?'), /^Уточните, пожалуйста/);
  t.match(outOfScopeReply(null, 'какая погода?'), /только с вопросами/);
  t.equal(outOfScopeReply('Only shoes here.', 'weather?'), 'Only shoes here.');
});

t.test('the language of a text', async (t) => {
  t.equal(detectLanguage('Do you accept returns?'), 'english');
  t.equal(detectLanguage('Можно вернуть товар?'), 'russian');
  t.equal(detectLanguage('Wie lange dauert die Lieferung nach Berlin?'), 'german');
  t.equal(detectLanguage('Est-ce que vous livrez le dimanche ?'), 'french');
  t.equal(detectLanguage('¿Cuánto cuesta el envío a Madrid?'), 'spanish');
  t.equal(detectLanguage('Klarna?'), null, 'too short to tell');
  t.equal(detectLanguage('12345'), null);
  t.equal(documentLanguage('Returns', 'Returns are accepted within 30 days with a receipt.'), 'english');
  t.equal(documentLanguage('Klarna', 'Klarna'), 'english', 'a Latin text that does not say falls back to English');
});

t.test('names and numbers weigh little', async (t) => {
  t.same([...namesIn('Do you ship to Lisbon? I am Maria from Porto.')], ['lisbon', 'maria', 'porto']);
  t.same([...namesIn('Where is my order? I need it.')], [], 'a sentence start and "I" are no names');
  // A base of four chunks: "ship" in one, "lisbon" and "4411" nowhere.
  const facts = (names: string[]): QuestionFacts => ({
    chunks: 4,
    names: new Set(names),
    words: [
      { qi: 1, lexeme: 'ship', df: 1, neighbours: [], synonyms: [] },
      { qi: 2, lexeme: 'lisbon', df: 0, neighbours: [], synonyms: [] },
      { qi: 3, lexeme: '4411', df: 0, neighbours: [], synonyms: [] },
    ],
  });
  const holdsShip = [{ matches: [{ qi: 1, via: 'own' as const, term: 'ship', inHeading: true }] }];
  const [asName] = passageConfidences(facts(['lisbon']), holdsShip);
  const [asWord] = passageConfidences(facts([]), holdsShip);
  t.ok(asName! >= 0.5, `"Do you ship to Lisbon? (order 4411)" covered ${asName}, well above the default threshold`);
  t.ok(asName! > asWord!, `a name weighs less than an unknown word (${asName} > ${asWord})`);
  t.equal(combinedConfidence(0.5, null), 0.5, 'no vectors: the lexical coverage');
  t.ok(combinedConfidence(0.2, 0.7, 1) > combinedConfidence(0.2, 0.7, 0), 'meaning adds to the passage that stands out');
  t.equal(combinedConfidence(0.2, 0.7, 0), 0.2, 'and only to it');
});

import t from 'tap';
import { foldForComparison, missingPhrases } from '../../lib/agents/evaluate.js';

// "Test agent" compares expected phrases after folding case, dashes, quotes and spaces
// (contract.md § Answers that find what the help centre says): what a person types into a case
// matches what a model or a help centre writes with typographic characters, and the other way round.
t.test('dashes: – — ‒ − ‐ ‑ are a hyphen', async (t) => {
  t.same(missingPhrases('Delivery takes 2–4 working days.', ['2-4 working days']), [], 'an en dash in the answer');
  t.same(missingPhrases('Delivery takes 2-4 working days.', ['2–4 working days']), [], 'an en dash in the phrase');
  for (const dash of ['\u2014', '\u2012', '\u2212', '\u2010', '\u2011']) {
    t.same(missingPhrases(`Open 9${dash}18`, ['9-18']), [], `U+${dash.codePointAt(0)!.toString(16).toUpperCase()}`);
  }
  t.same(missingPhrases('Delivery takes 2–4 working days.', ['2-5 working days']), ['2-5 working days'], 'other numbers still differ');
});

t.test('quotes: ‘ ’ ‚ ‛ ′ are an apostrophe, “ ” „ « » ″ a double quote', async (t) => {
  t.same(missingPhrases('Pay later with “Klarna”.', ['"Klarna"']), []);
  t.same(missingPhrases('Pay later with "Klarna".', ['“Klarna”']), [], 'either way round');
  t.same(missingPhrases('Платите через «Klarna».', ['"klarna"']), [], 'guillemets');
  t.same(missingPhrases('Платите через „Klarna“.', ['«Klarna»']), [], 'German quotes against guillemets');
  t.same(missingPhrases('A 27″ screen', ['27"']), [], 'a double prime');
  t.same(missingPhrases('We don’t ship on Sundays.', ["don't ship"]), [], 'a typographic apostrophe');
  for (const q of ['\u2018', '\u2019', '\u201A', '\u201B', '\u2032']) t.equal(foldForComparison(`it${q}s`), "it's", `U+${q.codePointAt(0)!.toString(16).toUpperCase()}`);
  t.same(missingPhrases('Pay with Klarna.', ['"Klarna"']), ['"Klarna"'], 'quotes the answer does not have still count');
});

t.test('spaces: NBSP, thin spaces, line breaks and runs of them are one space', async (t) => {
  t.same(missingPhrases('It costs 5\u00a0EUR and takes 2\u2009days.', ['5 eur', '2 days']), []);
  t.same(missingPhrases('Returns are accepted\nwithin   30\r\ndays.', ['accepted within 30 days']), []);
  t.same(missingPhrases('10\u202f000 points', ['10 000 points']), [], 'a narrow no-break space');
  t.same(missingPhrases('re\u00adturns with\u200b receipt', ['returns with receipt']), [], 'soft hyphens and zero-width spaces show nothing');
  t.same(missingPhrases('  Open  daily ', ['  open daily  ']), [], 'spaces at the ends of a phrase');
});

t.test('case and ё/е, as before; every missing phrase named in the order given', async (t) => {
  t.same(missingPhrases('Доставка — 3 дня.  Ёлки   ЗЕЛЁНЫЕ', ['доставка - 3', 'елки зеленые', '5 дней', 'ДОСТАВКА']), ['5 дней']);
  t.same(missingPhrases('We open at nine.', ['Ten', 'nine', 'eleven']), ['Ten', 'eleven']);
  t.same(missingPhrases('Anything', []), []);
});

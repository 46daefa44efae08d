/**
 * Words that carry no subject in a customer's question ("what", "how", "your", "как",
 * "подскажите", …), English and Russian. Questions lose them before they are searched
 * (lib/knowledge/search.ts), whatever the base's text-search configuration: `simple`
 * keeps every word, and an unknown "what" would weigh as much as the subject of the
 * question. The built-in agent uses them to find the question's words in a passage.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are am any about at be been can could do does did for from have has had hello hi how i if in is it its me my ' +
    'of on or our please should tell that the there this to us was we what when where which who why will with would you your ' +
    // Words of asking, not of the subject ("how long", "how many", "I need", "is it possible").
    'long many much get need want still just also possible know like way ' +
    'а в во вы вас ваш ваша ваше ваши где да для до есть же за и или как какая какие какой каком когда ли мне можно мы на не ' +
    'но о об от по подскажите пожалуйста привет с скажите со так то у что это я ли бы ' +
    'сколько почему зачем хочу хотел хотела нужно надо могу можете ещё еще уже очень будет будут было'
  ).split(' '),
);

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;

/** Lowercase words of a text (`ё` read as `е`). */
export function wordsOf(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').match(WORD) ?? [];
}

/** The question's words without its stop words ('' when nothing else is left: a question of stop words alone finds nothing). */
export function withoutStopWords(question: string): string {
  return wordsOf(question).filter((w) => !STOP_WORDS.has(w)).join(' ');
}

/**
 * The language of a text, as a PostgreSQL text-search configuration, for a knowledge base
 * whose `language` is `auto` (contract.md § Answers that find what the help centre says): each
 * document is stemmed in the language it is written in, a question searched in its own.
 *
 * A script that only one shipped configuration reads decides alone (Cyrillic → `russian`,
 * Greek, Armenian, Arabic, Devanagari, Tamil). Latin text is read by its function words: each
 * language's commonest words (articles, pronouns, prepositions) are counted, and the language
 * with clearly the most wins. A text too short to say ("Klarna?") is `null`: the caller falls
 * back to the base's main language. Pure, and linear in the text.
 */
export const AUTO_LANGUAGE = 'auto';

/** Configurations a base's documents may be detected in (a subset of PostgreSQL 15's shipped ones). */
const FUNCTION_WORDS: Record<string, string> = {
  english: 'the a an and of to in is are you your we our it for on with this that do does can at be by or from have has my me what how when where which will not',
  german: 'der die das und ist ich sie nicht ein eine mit für auf den dem des zu von wir ihr sind kann wie was wann bei oder auch noch mein meine haben',
  french: 'le la les et est je vous nous une un des du de pour dans sur avec pas que qui mon ma mes votre vos comment quand où est-ce sont peut avez',
  spanish: 'el la los las y a es yo usted ustedes nosotros una un del de para en con por no que como cuando donde mi mis su sus puedo tienen hay está son',
  portuguese: 'o a os as e é eu você vocês nós uma um do da dos das de para em com por não que como quando onde meu minha seu sua posso têm há está são',
  italian: 'il lo la gli le e è io voi noi una un del della di per in con su non che come quando dove mio mia suo sua posso avete ci sono',
  dutch: 'de het een en is ik jij je u wij we van voor op met niet dat die hoe wanneer waar mijn uw zijn kan heeft hebben ook er',
  swedish: 'och är jag du ni vi en ett det den av för på med inte att som hur när var min mitt er ert kan har finns till om',
  danish: 'og er jeg du i vi en et det den af for på med ikke at som hvordan hvornår hvor min mit jeres kan har findes til om',
  norwegian: 'og er jeg du dere vi en et det den av for på med ikke at som hvordan når hvor min mitt deres kan har finnes til om',
  finnish: 'ja on olen sinä te me se ne ei että kuin miten milloin missä minun teidän voin voitteko onko kanssa myös',
  turkish: 've bir bu da de ben sen siz biz ne nasıl ne zaman nerede için ile değil mi mı mu mü var yok benim sizin',
  indonesian: 'dan yang di ke dari ini itu saya anda kami kita untuk dengan tidak apa bagaimana kapan dimana bisa ada adalah',
  hungarian: 'a az és egy hogy nem is van vagyok ön mi ez azt mikor hol hogyan tudok lehet kell az én az ön',
  romanian: 'și este eu dumneavoastră noi un o al ale din de pentru în cu pe nu că cum când unde meu mea puteți aveți sunt',
};

const WORDS_OF = new Map<string, ReadonlySet<string>>(Object.entries(FUNCTION_WORDS).map(([cfg, list]) => [cfg, new Set(list.split(' '))]));

/** Scripts that one configuration reads. */
const SCRIPTS: [RegExp, string][] = [
  [/\p{Script=Cyrillic}/gu, 'russian'],
  [/\p{Script=Greek}/gu, 'greek'],
  [/\p{Script=Armenian}/gu, 'armenian'],
  [/\p{Script=Arabic}/gu, 'arabic'],
  [/\p{Script=Devanagari}/gu, 'hindi'],
  [/\p{Script=Tamil}/gu, 'tamil'],
];

const LATIN = /\p{Script=Latin}/gu;
/** Characters of a text read at most (a document's opening says its language). */
const SAMPLE_CHARS = 1500;

function count(text: string, re: RegExp): number {
  re.lastIndex = 0;
  let n = 0;
  while (re.exec(text)) n++;
  return n;
}

/**
 * The configuration `text` is written in, or null when it cannot be told (no letters, or too
 * few function words). `minWords`: function words the winner needs (a question has few).
 */
export function detectLanguage(text: string, minWords = 1): string | null {
  const sample = text.slice(0, SAMPLE_CHARS);
  const latin = count(sample, LATIN);
  let script: [number, string] | null = null;
  for (const [re, cfg] of SCRIPTS) {
    const n = count(sample, re);
    if (n > 0 && (!script || n > script[0])) script = [n, cfg];
  }
  if (script && script[0] >= latin) return script[1];
  if (latin === 0) return null;
  const words = sample.toLowerCase().match(/[\p{L}'-]+/gu) ?? [];
  const scores = new Map<string, number>();
  for (const w of words) {
    for (const [cfg, set] of WORDS_OF) if (set.has(w)) scores.set(cfg, (scores.get(cfg) ?? 0) + 1);
  }
  let best: string | null = null;
  let bestScore = 0;
  let second = 0;
  for (const [cfg, n] of scores) {
    if (n > bestScore) {
      second = bestScore;
      best = cfg;
      bestScore = n;
    } else if (n > second) second = n;
  }
  // A clear winner: a tie between languages that share words ("de", "en") says nothing.
  if (!best || bestScore < minWords || bestScore <= second) return null;
  return best;
}

/** A document's configuration: detected, else English (most help centres written in Latin script are). */
export function documentLanguage(title: string, content: string): string {
  return detectLanguage(`${title}\n${content}`, 2) ?? (count(`${title} ${content}`, LATIN) > 0 ? 'english' : 'simple');
}

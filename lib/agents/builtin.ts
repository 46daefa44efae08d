import { STOP_WORDS, wordsOf } from '../knowledge/stop-words.js';
import { phrasePattern as phrase } from './phrase-pattern.js';

/**
 * The `builtin` provider's answer composition, pure: from the best-matching knowledge chunk
 * (found by lib/knowledge/search.ts, one statement for a batch of questions), the passage
 * that answers the question; and the test of whether the customer asks for a person. No
 * model, no network, no cost.
 */

export const DEFAULT_ANSWER_LENGTH = 600;
/** In a long paragraph, sentences after the best one are added until the answer is this long. */
const CONTEXT_LENGTH = 200;

// ---- asking for a human -------------------------------------------------------------------

/** Who a customer asks for (English): a person of the company, however named. */
const PERSON_EN =
  '(?:(?:an? |the |some |one of your |your |a member of )?(?:real |actual |live |human |other )?' +
  '(?:person|human|human being|someone|somebody|anyone|anybody|employee|staff member|member of (?:staff|your team|the team)|team member|colleague|colleagues|manager|supervisor|owner|' +
  'representative|rep|agent|operator|consultant|specialist|support (?:staff|team|person)|customer (?:service|support|care)(?: rep| agent| team| person)?))';
/** The same in Russian (case endings left open). */
const PERSON_RU = '(?:человек|живы\\p{L}* люд|менеджер|сотрудник|специалист|консультант|оператор|администратор|руководител|руководств|начальник)\\p{L}*';
/** Verbs that ask for someone in Russian: call, connect, switch, invite, give… */
const CALL_FOR_RU = '(?:позов|позв|позав|соедин|переключ|подключ|пригласи|свяж|дай|дайте|нужен|нужна|нужно|хочу)\\p{L}*';

/**
 * Phrases that ask for a person. Matched on a normalised message (lowercase, `ё` → `е`,
 * punctuation removed, one space between words). Each entry is guarded against the common false positive it would
 * otherwise have ("tour operators", "мобильный оператор", "на 10 человек").
 */
const HUMAN_REQUEST_PATTERNS: readonly RegExp[] = [
  // English
  phrase('(?<!(?:robots?|machines?|bots?) or )humans?(?! (?:resources|rights|error|hair|body|made))'),
  phrase('(?<!(?:tour|mobile|camera|network|phone|drone|crane|sms|cell|cellular|video|bus|radio|machine|forklift|tv) )operators?(?! (?:of|for|do|does|did|use|used))'),
  phrase('real (?:person|people|human)(?! (?:hair|leather))|actual (?:person|people|human|employee)|live (?:agent|person|operator|support|chat)'),
  phrase('agent please|please (?:an? )?agent|representative'),
  phrase(`(?:want|need|get me|give me|find me|send me|bring me) ${PERSON_EN}(?! (?:to sign|at home|to be present|to collect|to pick))`),
  phrase(`(?:talk|speak|chat|communicate) (?:to|with) (?:${PERSON_EN}|support)`),
  phrase(`(?:connect|transfer|pass|put|switch|forward|escalate|hand)(?:ed)? (?:me |this |it )?(?:through |over |on )?(?:to|with) (?:${PERSON_EN}|support)`),
  phrase(`${PERSON_EN} (?:from [\\p{L} ]{1,30} )?(?:to )?(?:call|ring|phone|contact|message|text|email|reach out to|get back to|get in touch with) me(?! (?:when|if|before|once|after))`),
  phrase(`let ${PERSON_EN} (?:answer|reply|respond|handle|take over|help)`),
  phrase('(?:person|human|manager|agent|operator|representative|rep|staff) (?:please|pls|plz|asap)'),
  phrase('(?:anyone|anybody|someone|somebody) (?:real|human|alive|from (?:the|your) team)(?: \\p{L}+)? (?:there|online|here|around)|(?:anyone|anybody|someone) online|(?:anyone|someone|somebody) (?:i|we) (?:can|could) (?:talk|speak) (?:to|with)'),
  phrase('(?<!(?:do|will|would|does|did|should|can) (?:you|they|we|it|the \\p{L}+) )(?:call|ring|phone) me(?: back)?(?! (?:when|if|before|once|after))|callback|call back|give me a call|on the phone with|(?:get|have|put) (?:someone|somebody|a person|a manager|an agent) on the phone'),
  phrase("(?:stop (?:the |this |your )?|no more |enough of (?:the |this |your )?)(?:chat ?bots?|bots?|robots?|automated (?:answers|replies|responses|messages))|not (?:a|the|this|your) (?:chat ?bot|bot|robot)|(?:don'?t|do not) want (?:to (?:talk|chat|speak) (?:to|with) )?(?:a |the |your )?(?:chat ?bot|bot|robot|machine)|bot go away|(?:stop|quit) replying automatically"),
  // Asking for someone by their role ("the mechanic", "the receptionist"): to talk with them, directly or in person.
  phrase("(?:can|could|may) (?:i|we) (?:talk|speak|chat|have a word) (?:to|with) (?:the|your|a|an|one of your|someone|somebody)|(?:i'?d|i would|we'?d) (?:like|love) to (?:talk|speak|chat) (?:to|with)|have a word with|(?:talk|speak|chat) (?:to|with) (?:the |your )?\\p{L}+ (?:directly|in person|personally|face to face)|(?:call|ring|phone|reach) (?:someone|somebody|a person) (?:at|from|in)"),
  phrase('(?:anyone|someone|somebody) (?:from (?:the|your) (?:team|staff|shop|store|office) )?(?:i|we) (?:can|could) (?:talk|speak|chat)'),
  // Russian (and Ukrainian)
  phrase('(?<!(?:мобильн|сотов|как|каког|каким|через)\\p{L}* )оператор\\p{L}*(?! (?:связи|дрона|сотов|мобильн|смс|sms|вы|отправ|дост))'),
  phrase('жив\\p{L}* (?:человек|собеседник|менеджер|сотрудник|специалист|консультант|оператор|люд|людин)\\p{L}*|есть кто живой|кто нибудь реальный|кто то реальный|реальн\\p{L}* (?:человек|сотрудник|менеджер)\\p{L}*'),
  phrase(`${CALL_FOR_RU} (?:(?!на |к |ко |запис)\\p{L}+ ){0,2}(?:с |со |на )?(?:${PERSON_RU}|кого нибудь|кого то)`),
  phrase(`(?<!\\p{N} ?)(?:${PERSON_RU}|кого нибудь|кого то) (?:\\p{L}+ )?(?:позов|позв|позав|пригласи|подключ|нужен|нужна)\\p{L}*|(?:оператор|менеджер|консультант|администратор)\\p{L}* (?:пожалуйста|плиз|пж|срочно)`),
  phrase(`(?:поговорить|общаться|пообщаться|связаться|переписываться|говорить) (?:с|со) (?:\\p{L}+ ){0,2}(?:${PERSON_RU}|мастером|врачом|кем нибудь|кем то)`),
  phrase('с (?:кем нибудь|кем то|человеком|менеджером|оператором|сотрудником) (?:\\p{L}+ ){0,2}(?:можно )?(?:поговорить|пообщаться|связаться)'),
  phrase('можно (?:\\p{L}+ )?(?:человека|менеджера|сотрудника|специалиста|консультанта|оператора|администратора|руководителя)(?![\\p{L}])|можно (?:с|со) (?:\\p{L}+ )?(?:человеком|менеджером|сотрудником|специалистом|консультантом|оператором|администратором|руководителем)(?![\\p{L}])'),
  phrase('перезвон\\p{L}*|(?:позвоните|наберите|набери|напишите) мне|мне (?:позвон|набер|перезвон)\\p{L}*|(?:свяжитесь|свяжись) со мной|связа\\p{L}* со мной|(?:наберите|набери) меня|со мной (?:связал|связа|свяж)\\p{L}*|(?:звонка|звонок) от (?:менеджер|сотрудник|оператор)\\p{L}*'),
  phrase('пусть (?:\\p{L}+ ){0,3}(?:перезвон|позвон|набер|ответит|свяж)\\p{L}*'),
  phrase('(?:не хочу|надоел\\p{L}*|хватит|отстань|достал\\p{L}*)(?: \\p{L}+){0,3} (?:бот|робот|автоответ|автомат)\\p{L}*|(?:с|со) (?:бот|робот)(?:ом|ами)(?! пылесос)|робот отстань'),
  // By role ("позовите кондитера", "соедините с методистом", "поговорить с флористом напрямую").
  phrase('(?:позовите|позови|пригласите|соедините|соедини|переключите|переключи)(?! (?:меня )?(?:на (?:сайт|страниц|оплат)))|(?:поговорить|пообщаться|побеседовать|переговорить) (?:с|со) (?!(?:вами|нами|тобой|ним|ней|ними)(?![\\p{L}]))\\p{L}+(?:ом|ем|ой|ей|ым|им)(?![\\p{L}])|(?:лично|напрямую) (?:с |со )?(?:\\p{L}+ )?(?:поговорить|пообщаться|обсудить)|(?:обсудить|поговорить|пообщаться) (?:\\p{L}+ )?(?:лично|напрямую)'),
  phrase('з людиною|жива людина'),
  // Spanish / Portuguese, German, French
  phrase('humano|persona real|pessoa real|atendente|hablar con (?:alguien|una persona|un agente)'),
  phrase('mitarbeiter(?:in)?|echte[nrm]? (?:person|mensch)|mit einem menschen'),
  phrase('humain|vraie personne|conseill(?:er|ère)|parler à quelqu.un'),
];

/**
 * A message that is just "человек!" / "человека" / "agent" asks for a person; inside a
 * sentence the word usually counts people, or is someone else ("travel agent").
 */
const BARE_PERSON = /^(?:человек|человека|людина|менеджер|менеджера|оператор|оператора|сотрудник|сотрудника|консультант|консультанта|администратор|администратора|(?:an? )?agents?|(?:a )?person|(?:an? )?(?:human|operator|manager))$/u;

function normaliseMessage(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/\s+/g, ' ').trim();
}

/** Does the customer ask to talk to a human? */
export function wantsHuman(text: string): boolean {
  const t = normaliseMessage(text).replace(/[^\p{L}\p{N}'’]+/gu, ' ').trim();
  if (!t) return false;
  return BARE_PERSON.test(t) || HUMAN_REQUEST_PATTERNS.some((re) => re.test(t));
}

// ---- composing the answer -----------------------------------------------------------------

const words = wordsOf;

/** The question's meaningful words: lowercase, deduplicated, stop words removed. */
export function questionTerms(question: string): string[] {
  return [...new Set(words(question).filter((w) => !STOP_WORDS.has(w)))];
}

/**
 * Two word forms of one word, without a stemmer: "hour" ~ "hours", "opening" ~ "open",
 * "delivery" ~ "deliveries", "работы" ~ "работаем". Short words must be a prefix of the other.
 */
export function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  const m = Math.min(a.length, b.length);
  let p = 0;
  while (p < m && a[p] === b[p]) p++;
  if (m < 4) return p === m && Math.max(a.length, b.length) - m <= 2;
  if (m === 4) return p === 4;
  return p >= Math.min(5, m - 1);
}

interface Unit {
  text: string;
  /** Separator before this unit within its paragraph: a space (same line) or a line break. */
  sep: ' ' | '\n';
  hits: Set<string>;
}

interface Paragraph {
  units: Unit[];
  text: string;
  hits: Set<string>;
}

function paragraphsOf(content: string, terms: string[]): Paragraph[] {
  const out: Paragraph[] = [];
  for (const block of content.replace(/\r\n?/g, '\n').split(/\n[ \t]*\n/)) {
    const lines = block
      .split('\n')
      .map((l) => l.replace(/^#{1,6}\s+/, '').replace(/[\s\u00a0]+/g, ' ').trim())
      .filter(Boolean);
    if (!lines.length) continue;
    const units: Unit[] = [];
    lines.forEach((line, i) => {
      line.split(/(?<=[.!?…])\s+(?=\S)/u).forEach((sentence, j) => {
        const ws = words(sentence);
        const hits = new Set(terms.filter((t) => ws.some((w) => sameWord(t, w))));
        units.push({ text: sentence, sep: i > 0 && j === 0 ? '\n' : ' ', hits });
      });
    });
    const hits = new Set(units.flatMap((u) => [...u.hits]));
    out.push({ units, text: lines.join('\n'), hits });
  }
  return out;
}

const joinUnits = (units: Unit[]) => units.map((u, i) => (i === 0 ? u.text : u.sep + u.text)).join('');

/** Cuts at a word boundary and marks the cut. */
export function truncate(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const cut = text.slice(0, Math.max(1, maxLength - 1));
  const space = cut.search(/\s\S*$/);
  return `${(space > maxLength * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,;:–-]+$/, '')}…`;
}

/** A short line without a sentence end, or ending in ":" — a heading whose answer follows. */
const looksLikeHeading = (p: Paragraph) => p.text.length <= 80 && !/[.!?…]$/.test(p.text);

/**
 * The reply to `question` from `doc`: the paragraph that contains most of the question's
 * words, with the matching paragraphs right after it (or, when that paragraph is long, its
 * best sentence with a little context),
 * at most `maxLength` characters. When no paragraph contains any of them (the document
 * matched on its title), the beginning of the document. null for an empty document.
 * Pure: no database, no clock.
 */
export function composeAnswer(question: string, doc: { title: string; content: string }, maxLength = DEFAULT_ANSWER_LENGTH): string | null {
  const terms = questionTerms(question);
  const paragraphs = paragraphsOf(doc.content, terms);
  if (!paragraphs.length) return null;

  let best = 0;
  paragraphs.forEach((p, i) => {
    if (p.hits.size > paragraphs[best]!.hits.size) best = i;
  });
  const chosen = paragraphs[best]!;

  if (chosen.text.length <= maxLength) {
    // A heading ("## Opening hours") carries no answer: take what follows it too. Following
    // paragraphs that match as well continue the answer ("... Mon–Fri." / "Closed on Sunday.").
    let text = chosen.text;
    for (let i = best; i + 1 < paragraphs.length; i++) {
      const heading = looksLikeHeading(paragraphs[i]!);
      if (!heading && paragraphs[i + 1]!.hits.size === 0) break;
      const next = `${text}\n\n${paragraphs[i + 1]!.text}`;
      if (next.length > maxLength) {
        if (i === best && heading) text = truncate(next, maxLength);
        break;
      }
      text = next;
    }
    return text;
  }

  // A long paragraph: its best sentence; the sentences after it while they match too or the
  // passage is still short (they usually continue the answer); matching sentences before it.
  const units = chosen.units;
  let at = 0;
  units.forEach((u, i) => {
    if (u.hits.size > units[at]!.hits.size) at = i;
  });
  let from = at;
  let to = at;
  const length = (a: number, b: number) => joinUnits(units.slice(a, b + 1)).length;
  const context = Math.min(CONTEXT_LENGTH, maxLength);
  while (to + 1 < units.length && length(from, to + 1) <= maxLength && (units[to + 1]!.hits.size > 0 || length(from, to) < context)) to++;
  while (from > 0 && length(from - 1, to) <= maxLength && units[from - 1]!.hits.size > 0) from--;
  return truncate(joinUnits(units.slice(from, to + 1)), maxLength);
}

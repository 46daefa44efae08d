import { STOP_WORDS, wordsOf } from '../knowledge/stop-words.js';
import { sameWord } from './builtin.js';
import { phrasePattern } from './phrase-pattern.js';

/**
 * Does a model's reply promise an action no tool performed? A model told to call
 * `handoff_to_human` sometimes writes "I'll transfer you" or "a colleague will contact you"
 * instead: the customer would wait for a person who never comes. Such a reply is not sent
 * (lib/agents/answer.ts modelAnswer); this module only finds the promise.
 *
 * Two kinds of promise:
 * - the agent's own act ("I'll transfer you", "I've cancelled your order", "я передам",
 *   "оформила возврат", "your request has been forwarded"): the agent can do none of these
 *   except through a tool, so no passage makes it true;
 * - someone else's future act ("a colleague will contact you", "с вами свяжется менеджер",
 *   "the courier will call you"): a fact when a passage given to the model says it, in its
 *   words (see `grounded`), a promise otherwise.
 * With the company's own tools (lib/agents/tools/toolbox.ts) an act can be done: a company tool
 * that succeeded in this answer makes its act no promise, of either kind, when the act (the
 * phrase's last word, inflected: "cancelled" for `cancel_order`, "opened" for a tool that "Opens
 * a support ticket") is in its name or description (`done`).
 * Questions ("shall I transfer you?") and advice ("you can call us at …") are not promises;
 * the patterns need a first-person act or a third-party future, so advice never matches, and
 * a sentence ending in "?" is skipped.
 *
 * Matched on a normalised sentence (NFKC, lowercase, `ё` → `е`, one kind of apostrophe,
 * punctuation removed) like lib/agents/builtin.ts wantsHuman. English and Russian in depth,
 * German, Spanish and French for the common phrasings. The labelled set in
 * test/lib/promises.test.ts is the specification.
 */

interface PromisePattern {
  re: RegExp;
  /** Someone else's future act: a passage that says the same is a fact, not a promise. */
  groundable: boolean;
}

const self = (body: string): PromisePattern => ({ re: phrasePattern(body, 'g'), groundable: false });
const others = (body: string): PromisePattern => ({ re: phrasePattern(body, 'g'), groundable: true });

// ---- English -------------------------------------------------------------------------------

const EN_STAFF = "colleagues?|someone|somebody|team|managers?|specialists?|agents?|operators?|representatives?|humans?|person|staff|consultants?|experts?|supervisors?|support|department|courier|we|they|he|she";
const EN_SELF_ACTS = [
  'transfer', 'connect', 'forward', 'pass', 'escalate', 'hand', 'put you through', 'route', 'refer', 'redirect',
  '(?:get|have|ask) (?:a|an|someone|somebody|my|our|the|one)',
  "(?:notify|inform|tell|let) (?:the|our|my|a) (?:\\p{L}+ )?(?:team|managers?|colleagues?|staff|department|supervisor|specialists?)(?: know)?", 'let you know',
  'make sure', 'ensure', 'arrange', 'schedule', 'book', 'reserve', 'cancel', 'refund', 'process', 'update', 'change',
  'send you (?:an? )?(?:email|e mail|message|sms|text|confirmation|invoice|letter|call)', 'email you', 'text you', 'message you', 'call you', 'contact you', 'reach out',
  'get back', 'follow up', 'look into', 'investigate',
  "check(?: \\p{L}+){0,6}? (?:and|then)(?: i'll| i will)? (?:get back|let you know|come back|follow up|update you|reply|write|contact you|call you|message you)",
].join('|');
const EN_SELF_DONE = 'transferred|forwarded|passed (?:on|along|your|it|this|the)|escalated|cancell?ed|refunded|booked|reserved|scheduled|arranged|updated|changed|processed|issued|notified|informed|submitted|registered|logged|placed|sent (?:your|the|it|this|you)|created|opened|raised|filed';
const EN_OTHERS_ACTS =
  'contact|call|ring|phone|email|e mail|message|text|write to|reach out|get back|get in touch|be in touch|follow up|reply|respond|take over|join|pick (?:you|this|it) up|look into|be with you|send you|assist you|answer you';

const ENGLISH: PromisePattern[] = [
  self(`(?:i'll|i will|i'm going to|i am going to|i'm about to|let me|allow me to|i'd like to|i shall)(?: now| just| quickly| immediately| personally)? (?:${EN_SELF_ACTS})(?: you)?`),
  self("(?:i'm|i am|we're|we are)(?: now| just)? (?:transferring|connecting|forwarding|passing|escalating|handing|putting you through|redirecting|routing|calling|contacting|cancell?ing|refunding|booking|processing|arranging|notifying)(?: you)?"),
  self('^(?:now )?(?:transferring|connecting|redirecting|forwarding|putting) you'),
  self('(?:while|as|once) i (?:transfer|connect|forward|pass|escalate|put|hand) you'),
  self(`i(?:'ve| have)?(?: now| just| already| also)? (?:${EN_SELF_DONE})`),
  self(`we(?:'ve| have)?(?: now| just| already| also)? (?:${EN_SELF_DONE}) (?:your|you)`),
  self('(?:your|the) (?:request|complaint|question|issue|case|ticket|order|message|inquiry|enquiry|application|booking|reservation|refund|return|details|information|info|feedback|payment|conversation|chat)s? (?:has been|have been|was|were|is being|are being|has now been|has just been)(?: just| already| now)? (?:forwarded|passed|escalated|transferred|sent|cancell?ed|refunded|booked|reserved|registered|submitted|handed|logged|reported|updated|changed)'),
  self("you(?:'ll| will) (?:now )?be (?:transferred|connected|put through|redirected|handed over)"),
  others(`(?:${EN_STAFF})(?: \\p{L}+){0,4}?(?:'ll| will| shall| is going to| are going to)(?: soon| shortly| also| then| now| personally| promptly| gladly| definitely)? (?:${EN_OTHERS_ACTS})`),
  others("you(?:'ll| will) (?:soon |shortly )?(?:be (?:contacted|called|called back|phoned)|hear from|receive a (?:call|callback|reply|response))"),
];

// ---- Russian -------------------------------------------------------------------------------

const RU_PAST = '(?:передал|переключил|соединил|перевел|перенаправил|направил|оформил|отменил|вернул|забронировал|записал|зарегистрировал|создал|отправил|сообщил|эскалировал|подключил|позвал|пригласил|уточнил)а?';
const RU_PAST_PLURAL = 'передали|переключили|перенаправили|направили|оформили|отменили|вернули|забронировали|записали|зарегистрировали|отправили|сообщили';
const RU_OBJECT = 'ваш\\p{L}*|вас|вам|запрос\\p{L}*|заявк\\p{L}*|обращени\\p{L}*|информаци\\p{L}*|вопрос\\p{L}*|возврат\\p{L}*|заказ\\p{L}*|жалоб\\p{L}*|деньги|средства|столик\\p{L}*';
const RU_FUTURE_3 =
  'подключ(?:ится|атся)|присоедин(?:ится|ятся)|свяж(?:ется|утся|емся)|перезвон(?:ит|ят|им)|позвон(?:ит|ят|им)|напиш(?:ет|ут|ем)|ответ(?:ит|ят|им)|займ(?:ется|утся|емся)|возьм(?:ет|ут|ем)|разбер(?:ется|утся|емся)|отправ(?:ит|ят|им) вам|пришл(?:ет|ют|ем) вам|верн(?:ется|утся|емся) к вам';
const RU_CALL = 'перезвон(?:ит|ят|им)|позвон(?:ит|ят|им)|напиш(?:ет|ут|ем)|ответ(?:ит|ят|им)|набер(?:ет|ут|ем)';

const RUSSIAN: PromisePattern[] = [
  self(
    '(?:передам|передаю|переключу|переключаю|соединю|соединяю|переведу вас|перевожу вас|перенаправлю|перенаправляю|подключу|подключаю|позову|зову|приглашу|приглашаю|перезвоню|свяжусь|уточню|узнаю|проверю|выясню|оформлю|отменю|забронирую|запишу вас|верну (?:вам )?(?:деньги|средства|оплату)|отправлю вам|пришлю вам|напишу вам|сообщу вам|сообщу (?:\\p{L}+ )?(?:менеджер|коллег|специалист|руководител|оператор)\\p{L}*)(?: вас| вам)?',
  ),
  self(`я (?:уже |только что |сейчас |сразу )?${RU_PAST}`),
  self(`^(?:(?:хорошо|готово|отлично|итак|так|уже|только что|сделано|принято) )*${RU_PAST} (?:${RU_OBJECT})`),
  self(`мы (?:уже |только что )?(?:${RU_PAST_PLURAL}) (?:${RU_OBJECT})`),
  self(
    'ваш\\p{L}* (?:запрос|заявк|обращени|вопрос|жалоб|заказ|возврат|бронировани|платеж|сообщени)\\p{L}* (?:уже |успешно |был\\p{L}* )?(?:передан|направлен|перенаправлен|отменен|оформлен|зарегистрирован|отправлен (?:менеджер|специалист|оператор|коллег|в ))\\p{L}*',
  ),
  others('с вами свяж(?:ется|утся|емся)|свяж(?:ется|утся|емся) с вами'),
  others(`(?:вам|вас) (?:\\p{L}+ )?(?:${RU_CALL})|(?:${RU_CALL}) (?:\\p{L}+ )?(?:вам|вас)`),
  others(`(?:(?:оператор|менеджер|специалист|коллег|сотрудник|консультант|эксперт|курьер)\\p{L}*|мы|человек) (?:\\p{L}+ ){0,2}?(?:${RU_FUTURE_3})`),
];

// ---- German, Spanish, French ---------------------------------------------------------------

const OTHER_LANGUAGES: PromisePattern[] = [
  self('(?:ich )?(?:leite|verbinde|stelle) sie (?:\\p{L}+ ){0,4}?(?:weiter|durch)|ich (?:verbinde|leite) sie'),
  self('ich habe (?:\\p{L}+ ){0,4}?(?:weitergeleitet|storniert|erstattet|gebucht|reserviert)'),
  others('(?:wird|werden) sich (?:\\p{L}+ ){0,3}?bei ihnen melden|(?:wird|werden) sie (?:\\p{L}+ ){0,2}?(?:zurückrufen|anrufen|kontaktieren)'),
  self('(?:le|te) (?:transfiero|paso con|comunico|conecto|derivo)|voy a (?:transferir|pasar|comunicar|derivar|cancelar|reembolsar)(?:le|te)?'),
  self('he (?:cancelado|reembolsado|reservado|transferido|escalado|enviado su)'),
  others('(?:se pondr[aá]n?|nos pondremos) en contacto|(?:le|te) (?:llamar[aá]n?|llamaremos|contactar[aá]n?|contactaremos)'),
  self('je vous (?:transf[eè]re|mets en relation|passe|redirige|connecte)'),
  self("j'ai (?:annul[eé]|rembours[eé]|transmis|r[eé]serv[eé]|transf[eé]r[eé])"),
  others('vous (?:recontacter\\p{L}*|rappeller\\p{L}*|contacter(?:a|ons|ont))|prendr\\p{L}* contact avec vous'),
];

const PATTERNS: readonly PromisePattern[] = [...ENGLISH, ...RUSSIAN, ...OTHER_LANGUAGES];

// ---- grounding -----------------------------------------------------------------------------

/** Words that say who does it and when, not what: a passage need not repeat them. */
const FILLER = new Set(["i'll", "we'll", "you'll", "they'll", "he'll", "she'll", 'shall', 'вам', 'вами', 'нам', 'нас', 'он', 'она', 'они', 'их', 'его', 'ее']);

const contentWords = (text: string): string[] => [...new Set(wordsOf(text).filter((w) => !STOP_WORDS.has(w) && !FILLER.has(w)))];

/** A word's stem for inflected and prefixed forms ("звонит" in "позвонит"): its first letters, all of a short word. */
const stemOf = (w: string): string => (w.length <= 5 ? w : w.slice(0, Math.max(5, w.length - 3)));

const sameOrInflected = (a: string, b: string): boolean => sameWord(a, b) || a.includes(stemOf(b)) || b.includes(stemOf(a));

/**
 * A passage says this sentence when it holds the promised act (the phrase's last word: "call",
 * "свяжется"; who does it may be worded otherwise, "we" for "our team") and ≥ 75 % (≥ 3) of
 * the sentence's words.
 */
const MIN_COVERAGE = 0.75;
const MIN_WORDS = 3;

function grounded(sentence: string, phrase: string, passages: readonly string[][]): boolean {
  const words = contentWords(sentence);
  const act = contentWords(phrase).at(-1);
  return passages.some((passage) => {
    const has = (w: string) => passage.some((p) => sameOrInflected(w, p));
    if (act !== undefined && !has(act)) return false;
    const covered = words.filter(has).length;
    return covered >= MIN_WORDS && covered >= MIN_COVERAGE * words.length;
  });
}

// ---- the check -----------------------------------------------------------------------------

const normalise = (text: string): string => text.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/[’‘ʼ`´]/g, "'");

/** One sentence: its words, one space apart, and whether it asks. */
function sentencesOf(text: string): { words: string; asks: boolean }[] {
  const out: { words: string; asks: boolean }[] = [];
  for (const m of normalise(text).matchAll(/[^.!?…\n]+[.!?…]*/gu)) {
    const words = m[0].replace(/[^\p{L}\p{N}']+/gu, ' ').replace(/(^| )'+|'+(?= |$)/g, '$1').trim();
    if (words) out.push({ words, asks: m[0].includes('?') });
  }
  return out;
}

/**
 * How much of a long reply is read: its start and its end, where a chat reply's promise sits
 * ("…; I'll transfer you now"). A model answer may be 2 MiB, which would hold the worker's
 * event loop for half a second; this keeps the check under a few milliseconds.
 */
export const CHECKED_CHARS = 16_000;

const checkedPart = (text: string): string =>
  text.length <= 2 * CHECKED_CHARS ? text : `${text.slice(0, CHECKED_CHARS)}\n${text.slice(-CHECKED_CHARS)}`;

/** A company tool that succeeded in the answer: what it does. */
export interface DoneTool {
  name: string;
  description: string;
}

/** A tool's words: its name's parts (`cancel_order`, `cancelOrder`) and its description's. */
const toolWords = (t: DoneTool): string[] => wordsOf(`${t.name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ')} ${t.description}`.toLowerCase());

/** Did a tool that succeeded do the act of this phrase? */
function doneBy(phrase: string, tools: readonly string[][]): boolean {
  const act = contentWords(phrase).at(-1);
  return act !== undefined && tools.some((words) => words.some((w) => sameWord(act, w)));
}

/**
 * The first phrase of `text` that promises an action no tool performed (normalised, for the
 * log), or null. `passages` are the knowledge passages the model was given (and what its
 * tools returned); `done`, the company tools that succeeded in this answer.
 */
export function promisedAction(text: string, passages: readonly string[], done: readonly DoneTool[] = []): string | null {
  if (!text.trim()) return null;
  let passageWords: string[][] | null = null;
  let doneWords: string[][] | null = null;
  for (const { words, asks } of sentencesOf(checkedPart(text))) {
    if (asks) continue;
    const found: { at: number; phrase: string; groundable: boolean }[] = [];
    for (const p of PATTERNS) {
      for (const m of words.matchAll(p.re)) found.push({ at: m.index, phrase: m[0].trim(), groundable: p.groundable });
    }
    found.sort((a, b) => a.at - b.at);
    for (const f of found) {
      if (done.length > 0) {
        doneWords ??= done.map(toolWords);
        if (doneBy(f.phrase, doneWords)) continue;
      }
      if (f.groundable) {
        passageWords ??= passages.map((p) => wordsOf(p));
        if (grounded(words, f.phrase, passageWords)) continue;
      }
      return f.phrase;
    }
  }
  return null;
}

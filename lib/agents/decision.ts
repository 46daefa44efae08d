import type { AnswerDecision, DecisionPassage } from '../../schema/conversation.js';
import type { BestMatch } from '../knowledge/search.js';

/**
 * The answer decision's pure parts (contract.md § Answers a company can trust): whether a
 * customer message is only a greeting or a thanks (small talk needs a short reply, not a help
 * centre article), the question left once its greeting is taken off ("hi! how much is
 * delivery?"), which passage answers, and the record of the decision for the transition log.
 */
export type SmallTalk = 'greeting' | 'thanks';

/** What the transition log keeps of the customer's question. */
export const DECISION_QUESTION_LENGTH = 500;

/**
 * Phrases of greeting and of thanks, acknowledgement or goodbye, in the normalised form of
 * `normalise` (lowercase, `ё` → `е`, words separated by one space). Longer phrases first: a
 * message is read phrase by phrase from its start and from its end.
 */
const GREETINGS = [
  // English
  'good morning', 'good afternoon', 'good evening', 'good day', 'hello there', 'hi there', 'hey there', 'hi all', 'hello all', 'hello everyone', 'hi everyone',
  'dear team', 'dear support', 'hi team', 'hello team', 'hey team', 'how are you', 'how are you doing', 'how is it going', 'hows it going', 'whats up', 'good to see you', 'hope you are doing well', 'hope youre doing well', 'hope you are well', 'hope youre well',
  'anyone there', 'anybody there', 'is anyone there', 'is anybody there', 'hello', 'hi', 'hey', 'hiya', 'howdy', 'greetings', 'yo', 'morning', 'evening', 'heya', 'helo', 'hallo', 'hii', 'hiii', 'heyy', 'sup',
  // Russian, Ukrainian
  'доброе утро', 'добрый день', 'добрый вечер', 'доброй ночи', 'доброго дня', 'доброго времени суток', 'добрый', 'всем привет', 'привет всем', 'как дела', 'как поживаете',
  'есть кто', 'есть кто нибудь', 'кто нибудь здесь', 'приветствую вас', 'здравствуйте', 'здравствуй', 'здрасте', 'здрасьте', 'привет', 'приветик', 'приветствую', 'хай', 'салют', 'здорово', 'день добрый', 'вечер добрый',
  'доброго ранку', 'добрий день', 'добрий вечір', 'вітаю', 'привіт',
  // German, Spanish, Portuguese, French, Italian
  'guten morgen', 'guten tag', 'guten abend', 'servus', 'moin', 'buenos dias', 'buenas tardes', 'buenas noches', 'hola', 'bom dia', 'boa tarde', 'boa noite', 'ola', 'oi',
  'bonjour', 'bonsoir', 'salut', 'coucou', 'buongiorno', 'buonasera', 'ciao',
];

const THANKS = [
  // English
  'thanks for your help', 'thank you for your help', 'thanks for the help', 'thanks for helping', 'thanks a million', 'thank you very much', 'thank you so much', 'thanks a lot', 'thx a lot', 'thank you a lot', 'ty a lot', 'thank u', 'thanks mate', 'cheers mate', 'thanks so much', 'many thanks', 'thanks a bunch', 'much appreciated', 'nice one', 'thank you', 'thanks', 'thx', 'thnx', 'thanx', 'ty', 'tysm', 'cheers',
  'that helps', 'that helped', 'that was helpful', 'very helpful', 'that is helpful', 'thats helpful', 'helpful', 'appreciate it', 'i appreciate it', 'great', 'perfect', 'awesome', 'excellent', 'wonderful', 'nice', 'cool', 'super',
  'got it', 'understood', 'i see', 'makes sense', 'that makes sense', 'all clear', 'clear', 'ok', 'okay', 'okey', 'k', 'kk', 'alright', 'all right', 'fine', 'good', 'sure', 'noted', 'no problem',
  'bye', 'goodbye', 'good bye', 'bye bye', 'see you', 'see ya', 'have a nice day', 'have a good day', 'have a great day', 'have a good one', 'have a nice one', 'have a great one', 'take care', 'that is all', 'thats all', 'thats it', 'that is it', 'nothing else', 'thats all i needed', 'that is all i needed', 'thats all i need', 'bye for now', 'good night', 'night night',
  // Russian, Ukrainian
  'спасибо за ответ', 'благодарю за ответ', 'благодарю за помощь', 'мерси', 'спасибо за информацию', 'спасибки', 'спасибочки', 'большое спасибо', 'спасибо большое', 'огромное спасибо', 'спасибо огромное', 'спасибо за помощь', 'спасибо вам', 'благодарю вас', 'благодарю', 'спасибо', 'спс', 'пасиб', 'пасибо', 'сенкс',
  'все понятно', 'теперь понятно', 'все ясно', 'теперь ясно', 'понятно', 'ясно', 'понял', 'поняла', 'понял спасибо', 'хорошо', 'отлично', 'супер', 'класс', 'ок', 'окей', 'ладно', 'договорились', 'помогло', 'вы помогли', 'вы очень помогли', 'очень помогли',
  'до свидания', 'до свиданья', 'хорошего вечера', 'хороших выходных', 'удачи', 'всего доброго', 'всего хорошего', 'хорошего дня', 'пока', 'до встречи', 'больше ничего', 'это все', 'все спасибо',
  'дякую', 'щиро дякую', 'дуже дякую', 'до побачення', 'все зрозуміло', 'зрозуміло', 'добре',
  // German, Spanish, Portuguese, French, Italian
  'vielen dank', 'danke schön', 'danke schon', 'danke', 'tschüss', 'tschuss', 'muchas gracias', 'gracias', 'adios', 'obrigado', 'obrigada', 'merci beaucoup', 'merci', 'au revoir', 'grazie mille', 'grazie',
];

/** Words that only address or soften, allowed anywhere in small talk ("thanks again!", "hi guys"). */
const FILLERS = new Set(['again', 'so', 'very', 'much', 'guys', 'folks', 'all', 'there', 'to', 'you', 'u', 'everyone', 'team', 'and', 'oh', 'ah', 'well', 'yes', 'yeah', 'yep', 'now', 'ну', 'очень', 'теперь', 'вам', 'тебе', 'и', 'да', 'еще', 'раз', 'вот', 'ага', 'угу']);

type Phrase = { words: string[]; kind: SmallTalk };
const PHRASES: Phrase[] = [...GREETINGS.map((p) => ({ p, kind: 'greeting' as const })), ...THANKS.map((p) => ({ p, kind: 'thanks' as const }))]
  .map(({ p, kind }) => ({ words: normalise(p).split(' '), kind }))
  .sort((a, b) => b.words.length - a.words.length);

/** The phrases by their first word and by their last (longest first): every customer message is read against them. */
const indexBy = (pick: (p: Phrase) => string) => {
  const out = new Map<string, Phrase[]>();
  for (const p of PHRASES) out.set(pick(p), [...(out.get(pick(p)) ?? []), p]);
  return out;
};
const BY_FIRST = indexBy((p) => p.words[0]!);
const BY_LAST = indexBy((p) => p.words[p.words.length - 1]!);

function normalise(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, (m) => (m === '\u0306' ? m : '')) // accents off (é → e), but й stays й
    .normalize('NFC')
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(/['’]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

const startsWith = (words: string[], at: number, phrase: string[]) => phrase.every((w, k) => words[at + k] === w);

/**
 * Small talk at the start and the end of a message: its kind ('thanks' wins over 'greeting':
 * "ok thanks, hi again" closes rather than opens) and what is left between (the question).
 * `kind` is null when the message has none; `question` is '' when the message is only small
 * talk (then the agent answers it with a short reply).
 */
export function smallTalkOf(text: string): { kind: SmallTalk | null; question: string } {
  const words = normalise(text).split(' ').filter(Boolean);
  let from = 0;
  let to = words.length;
  let kind: SmallTalk | null = null;
  const note = (k: SmallTalk) => {
    if (kind !== 'thanks') kind = k;
  };
  // Peeled off the start, then off the end: phrases, and filler words once small talk was seen.
  for (const atStart of [true, false]) {
    while (from < to) {
      let length = 1;
      if (!(kind && FILLERS.has(words[atStart ? from : to - 1]!))) {
        const candidates = (atStart ? BY_FIRST.get(words[from]!) : BY_LAST.get(words[to - 1]!)) ?? [];
        const p = candidates.find((p) => p.words.length <= to - from && startsWith(words, atStart ? from : to - p.words.length, p.words));
        if (!p) break;
        note(p.kind);
        length = p.words.length;
      }
      if (atStart) from += length;
      else to -= length;
    }
  }
  if (!kind) return { kind: null, question: text };
  // The question as searched and logged: its words, lowercase (search ignores case and punctuation).
  return { kind, question: from >= to ? '' : words.slice(from, to).join(' ') };
}

/** A customer writing in Cyrillic gets the Russian default reply. */
const cyrillic = (text: string) => /\p{Script=Cyrillic}/u.test(text);

export const DEFAULT_GREETING = 'Hello! How can I help you?';
export const DEFAULT_GREETING_RU = 'Здравствуйте! Чем могу помочь?';
export const DEFAULT_THANKS = "You're welcome! Is there anything else I can help you with?";
export const DEFAULT_THANKS_RU = 'Пожалуйста! Могу ли я помочь чем-то ещё?';

/** The short reply to small talk: the agent's own greeting for a greeting, else the default in the customer's script. */
export function smallTalkReply(kind: SmallTalk, customerText: string, greeting: string | null): string {
  if (kind === 'greeting' && greeting) return greeting;
  const ru = cyrillic(customerText);
  if (kind === 'greeting') return ru ? DEFAULT_GREETING_RU : DEFAULT_GREETING;
  return ru ? DEFAULT_THANKS_RU : DEFAULT_THANKS;
}

/**
 * The passage an answer comes from: the most confident of the candidates, the fused search
 * score breaking ties (candidates come best-scored first).
 */
export function answeringPassage<T extends Pick<BestMatch, 'confidence'>>(passages: readonly T[]): T | null {
  let best: T | null = null;
  for (const p of passages) if (!best || p.confidence > best.confidence) best = p;
  return best;
}

export const decisionPassage = (p: Pick<BestMatch, 'documentId' | 'chunkId' | 'title' | 'confidence'> & { lexical?: number; semantic?: number | null }): DecisionPassage => ({
  documentId: p.documentId, chunkId: p.chunkId, title: p.title, confidence: p.confidence,
  ...(typeof p.lexical === 'number' ? { lexical: p.lexical } : {}),
  ...(typeof p.semantic === 'number' ? { semantic: p.semantic } : {}),
});

/** Passages a decision records (the best and its rivals). */
export const DECISION_PASSAGES = 3;

export function answerDecision(
  kind: AnswerDecision['kind'],
  input: { knowledgeBaseId: number | null; question: string; threshold: number; best?: DecisionPassage | null; passages?: DecisionPassage[]; options?: AnswerDecision['options']; handedOver?: boolean },
): AnswerDecision {
  return {
    kind,
    knowledgeBaseId: input.knowledgeBaseId,
    question: input.question.slice(0, DECISION_QUESTION_LENGTH),
    threshold: input.threshold,
    best: input.best ?? null,
    ...(input.passages?.length ? { passages: input.passages.slice(0, DECISION_PASSAGES) } : {}),
    ...(input.options?.length ? { options: input.options } : {}),
    ...(input.handedOver ? { handedOver: true } : {}),
  };
}

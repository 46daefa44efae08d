/**
 * Shapes of the tiny help centres of the answers benchmark (issue #42): the bases a new
 * company has (2–6 short articles, created with only a name) and one of 15–20 articles, with
 * the questions their customers write. The sets themselves are data only, written blind
 * (held-out-tiny-en.ts, held-out-tiny-ru.ts: never tuned on) or for tuning (tiny-dev.ts).
 */
export interface TinyArticle {
  key: string;
  title: string;
  content: string;
}

/**
 * - `answerable` / `paraphrase`: `answer` (an article's key) answers it; a paraphrase shares
 *   no content word with the article;
 * - `unanswerable`: about the business, but no article says it;
 * - `off_topic`: nothing to do with the business;
 * - `ambiguous`: two or three articles (`options`) each partly fit: the agent should ask which;
 * - `greeting`: only a greeting, thanks or goodbye;
 * - `human`: asks for a person.
 */
export interface TinyQuestion {
  text: string;
  kind: 'answerable' | 'paraphrase' | 'unanswerable' | 'off_topic' | 'ambiguous' | 'greeting' | 'human';
  answer?: string;
  options?: string[];
}

export interface TinyBase {
  key: string;
  name: string;
  language: 'en' | 'ru';
  articles: TinyArticle[];
  questions: TinyQuestion[];
}

import { answerOutsideConversation, type AgentProfile, type AnswerDeps } from '../../lib/agents/answer.js';
import type { Orm, SqlPool } from '../../lib/db.js';
import {
  GREETED_QUESTIONS_EN, GREETED_QUESTIONS_RU, HUMAN_REQUESTS_EN, HUMAN_REQUESTS_RU,
  NOT_HUMAN_REQUESTS_EN, NOT_HUMAN_REQUESTS_RU, SMALL_TALK_EN, SMALL_TALK_RU,
} from '../knowledge/dev-requests.js';
import { addDocument, baseInfo, createBase, createCompany } from '../lib/help-centres.js';
import { note } from '../lib/progress.js';
import { profile } from './trust-tiny.js';
import type { Row } from './types.js';

/**
 * The answers benchmark's messages that are not questions of a help centre (issue #42): a
 * request for a person is handed over as asked, small talk is greeted, and neither is read
 * into a question that only mentions people or opens with a greeting. Each message goes
 * through the real answer path (answerOutsideConversation) of a built-in agent over a small
 * base of its language. The lists (bench/knowledge/dev-requests.ts) were written blind but
 * are a development set: the detectors were tuned on them, so their misses are printed.
 */
interface Expectation {
  name: string;
  language: 'en' | 'ru';
  messages: readonly string[];
  /** What the decision should (or, `not`, should not) be. */
  kinds: readonly string[];
  not?: boolean;
}

const EXPECTATIONS: Expectation[] = [
  { name: 'requests for a person, English', language: 'en', messages: HUMAN_REQUESTS_EN, kinds: ['asked_for_human'] },
  { name: 'requests for a person, Russian', language: 'ru', messages: HUMAN_REQUESTS_RU, kinds: ['asked_for_human'] },
  { name: 'questions mentioning people, English: not handed over as a request', language: 'en', messages: NOT_HUMAN_REQUESTS_EN, kinds: ['asked_for_human'], not: true },
  { name: 'questions mentioning people, Russian: not handed over as a request', language: 'ru', messages: NOT_HUMAN_REQUESTS_RU, kinds: ['asked_for_human'], not: true },
  { name: 'small talk, English: greeted', language: 'en', messages: SMALL_TALK_EN, kinds: ['greeting', 'thanks'] },
  { name: 'small talk, Russian: greeted', language: 'ru', messages: SMALL_TALK_RU, kinds: ['greeting', 'thanks'] },
  { name: 'greeted questions, English: not only greeted', language: 'en', messages: GREETED_QUESTIONS_EN, kinds: ['greeting', 'thanks'], not: true },
  { name: 'greeted questions, Russian: not only greeted', language: 'ru', messages: GREETED_QUESTIONS_RU, kinds: ['greeting', 'thanks'], not: true },
];

const ARTICLES = {
  en: [
    { title: 'Opening hours', content: 'We are open Monday to Friday 9:00-19:00 and Saturday 10:00-16:00.' },
    { title: 'Delivery', content: 'We deliver within the city in 2 days; delivery costs 5 EUR, free from 50 EUR.' },
    { title: 'Returns', content: 'Returns are accepted within 30 days with a receipt.' },
  ],
  ru: [
    { title: 'Часы работы', content: 'Мы работаем с понедельника по пятницу с 9:00 до 19:00, в субботу с 10:00 до 16:00.' },
    { title: 'Доставка', content: 'Доставляем по городу за 2 дня, доставка 300 рублей, бесплатно от 3000 рублей.' },
    { title: 'Возврат', content: 'Товар можно вернуть в течение 14 дней с чеком.' },
  ],
};

export async function runRequestChecks(orm: Orm, sql: SqlPool, deps: AnswerDeps): Promise<{ rows: Row[]; data: Record<string, unknown> }> {
  const agents = new Map<'en' | 'ru', { agent: AgentProfile; base: Awaited<ReturnType<typeof baseInfo>> }>();
  for (const language of ['en', 'ru'] as const) {
    const company = await createCompany(sql, `requests ${language}`);
    const created = await createBase(sql, company, 'Help centre', 'auto', null);
    for (const a of ARTICLES[language]) await addDocument(orm, sql, created, a.title, a.content);
    const base = await baseInfo(sql, created);
    agents.set(language, { base, agent: profile(company, base.id) });
  }
  const rows: Row[] = [];
  const data: Record<string, unknown> = {};
  for (const e of EXPECTATIONS) {
    const { agent, base } = agents.get(e.language)!;
    const misses: string[] = [];
    for (const text of e.messages) {
      const { output } = await answerOutsideConversation({ ...deps, sql }, agent, base, text, { history: [] });
      const kind = output.decision?.kind ?? null;
      const hit = kind !== null && e.kinds.includes(kind);
      if (hit === Boolean(e.not)) misses.push(`${text} → ${kind}`);
    }
    const good = e.messages.length - misses.length;
    const share = e.messages.length ? (100 * good) / e.messages.length : 0;
    note('trust', `dev: ${e.name} (${e.messages.length}): ${share.toFixed(1)} %${misses.length ? `\n    misses: ${misses.join(' | ')}` : ''}`);
    rows.push({ section: 'trust', metric: `dev: ${e.name} (${e.messages.length})`, value: `${share.toFixed(1)} %` });
    data[e.name] = { messages: e.messages.length, good, misses };
  }
  return { rows, data };
}

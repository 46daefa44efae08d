import { appendFileSync } from 'node:fs';
import { smallTalkOf } from '../../lib/agents/decision.js';
import { answerEvidence } from '../../lib/knowledge/answer-evidence.js';
import { bestKnowledgeMatches } from '../../lib/knowledge/search.js';
import { answerOutsideConversation, DEFAULT_RELEVANCE_THRESHOLD, type AgentProfile, type AnswerDeps } from '../../lib/agents/answer.js';
import type { Orm, SqlPool } from '../../lib/db.js';
import { TINY_BASES_EN } from '../knowledge/held-out-tiny-en.js';
import { TINY_BASES_RU } from '../knowledge/held-out-tiny-ru.js';
import type { TinyBase, TinyQuestion } from '../knowledge/held-out-tiny.js';
import { TINY_DEV_BASES } from '../knowledge/tiny-dev.js';
import { TINY_DEV_MORE_BASES } from '../knowledge/tiny-dev-more.js';
import { baseInfo, createBase, createCompany, addDocument } from '../lib/help-centres.js';
import { note, progress } from '../lib/progress.js';
import { percentile } from '../lib/stats.js';
import type { Row } from './types.js';

/**
 * The answers benchmark's tiny help centres (issue #42): each base created as a new company
 * creates it (a name only: language `auto`, no settings), its articles added, every question
 * put to the real answer path (answerOutsideConversation: a person asked for, small talk, the
 * built-in agent's search and decision) at the default threshold, and judged by its kind:
 * - answerable and paraphrases: right (from the labelled article), wrong (from another),
 *   asked which one (clarify), handed over (no_answer), declined as out of scope;
 * - unanswerable (about the business, not in the articles): answered (wrong) or not;
 * - off-topic: declined without a handoff (out_of_scope), handed over, or answered;
 * - ambiguous: asked which one, answered from one of the fitting articles, or else;
 * - greetings: greeted; requests for a person: handed over as asked.
 * The CPU of each built-in answer (this process: search, vectors, decision) is measured too.
 * Held-out misses are not printed; development misses are, with their evidence.
 */
interface Tally {
  questions: number;
  right: number;
  wrong: number;
  clarified: number;
  handedOver: number;
  outOfScope: number;
  greeted: number;
  human: number;
}

const empty = (): Tally => ({ questions: 0, right: 0, wrong: 0, clarified: 0, handedOver: 0, outOfScope: 0, greeted: 0, human: 0 });
const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(1)} %` : '–');

type Group = 'answerable' | 'paraphrase' | 'unanswerable' | 'off_topic' | 'ambiguous' | 'greeting' | 'human';

export async function runTinyTrust(orm: Orm, sql: SqlPool, deps: AnswerDeps): Promise<{ rows: Row[]; data: Record<string, unknown> }> {
  const all: { name: string; heldOut: boolean; bases: TinyBase[] }[] = [
    { name: 'dev: tiny bases (the issue\'s examples)', heldOut: false, bases: TINY_DEV_BASES },
    { name: 'dev: tiny bases, more (written blind, tuned on)', heldOut: false, bases: TINY_DEV_MORE_BASES },
    { name: 'held out: tiny bases, English', heldOut: true, bases: TINY_BASES_EN.filter((b) => b.articles.length <= 6) },
    { name: 'held out: tiny bases, Russian', heldOut: true, bases: TINY_BASES_RU.filter((b) => b.articles.length <= 6) },
    { name: 'held out: a base of 15–20 articles, English', heldOut: true, bases: TINY_BASES_EN.filter((b) => b.articles.length > 6) },
    { name: 'held out: a base of 15–20 articles, Russian', heldOut: true, bases: TINY_BASES_RU.filter((b) => b.articles.length > 6) },
  ];
  // TRUST_DEV_ONLY=1: the development set alone (while tuning: the held-out figures are not looked at).
  const sets = process.env.TRUST_DEV_ONLY === '1' ? all.filter((s) => !s.heldOut) : all;
  const rows: Row[] = [];
  const data: Record<string, unknown> = {};
  const cpu: number[] = [];
  const total = sets.reduce((n, s) => n + s.bases.reduce((m, b) => m + b.questions.length, 0), 0);
  let asked = 0;
  for (const set of sets) {
    const tallies = new Map<Group, Tally>();
    const misses: string[] = [];
    for (const tiny of set.bases) {
      const company = await createCompany(sql, `${set.name} ${tiny.key}`);
      const created = await createBase(sql, company, tiny.name, process.env.TINY_LANGUAGE ?? 'auto', null);
      const documents = new Map<string, number>();
      for (const a of tiny.articles) {
        const ids = await addDocument(orm, sql, created, a.title, a.content);
        const { rows: doc } = await sql.query<{ document_id: number }>(`select document_id from knowledge_chunks where id = $1`, [[...ids.values()][0]]);
        documents.set(a.key, doc[0]!.document_id);
      }
      const base = await baseInfo(sql, created);
      const agent = profile(company, base.id);
      for (const q of tiny.questions) {
        if (++asked % 50 === 0) progress('trust', `tiny bases: ${asked} / ${total} questions`);
        const before = process.cpuUsage();
        const { output } = await answerOutsideConversation({ ...deps, sql }, agent, base, q.text, { history: [] });
        const used = process.cpuUsage(before);
        const decision = output.decision?.kind ?? null;
        if (decision !== 'greeting' && decision !== 'thanks' && decision !== 'asked_for_human') cpu.push((used.user + used.system) / 1000);
        const sourceDoc = output.kind === 'reply' ? (output.sources?.[0]?.documentId ?? null) : null;
        // TRUST_DUMP=file: each development question's evidence, one JSON line (for tuning the decision offline).
        if (process.env.TRUST_DUMP && !set.heldOut) await dumpEvidence(process.env.TRUST_DUMP, { ...deps, sql }, base, set.name, tiny, q, documents);
        const tally = tallies.get(q.kind) ?? empty();
        tallies.set(q.kind, tally);
        tally.questions++;
        const outcome = judge(q, decision, sourceDoc, output.decision?.options?.map((o) => o.documentId) ?? [], documents);
        tally[outcome]++;
        if (!set.heldOut && !isGood(q, outcome)) {
          const ev = (output.decision?.passages ?? []).map((p) => `${p.title} ${p.confidence} (lex ${p.lexical ?? '–'}, sem ${p.semantic ?? '–'})`).join('; ');
          misses.push(`[${q.kind}] ${q.text} → ${decision} ${outcome}${sourceDoc ? ` from ${[...documents].find(([, id]) => id === sourceDoc)?.[0]}` : ''} | ${ev}`);
        }
      }
    }
    const lines = [...tallies].map(([kind, x]) => `${kind} (${x.questions}): ${describe(kind, x)}`);
    note('trust', `${set.name}:\n    ${lines.join('\n    ')}${misses.length ? `\n  misses (development set only):\n    ${misses.join('\n    ')}` : ''}`);
    data[set.name] = Object.fromEntries(tallies);
    rows.push(...summaryRows(set.name, set.heldOut, tallies));
  }
  cpu.sort((a, b) => a - b);
  rows.push({ section: 'trust', metric: `CPU per built-in answer, median / p99 (${cpu.length} varied questions, this process)`, value: `${percentile(cpu, 50).toFixed(2)} / ${percentile(cpu, 99).toFixed(2)} ms`, target: 'median ≤ 5 ms', ok: percentile(cpu, 50) <= 5 });
  data.cpuMs = { median: percentile(cpu, 50), p99: percentile(cpu, 99), n: cpu.length };
  return { rows, data };
}

type Outcome = Exclude<keyof Tally, 'questions'>;

function judge(q: TinyQuestion, decision: string | null, sourceDoc: number | null, offered: number[], documents: Map<string, number>): Outcome {
  if (decision === 'greeting' || decision === 'thanks') return 'greeted';
  if (decision === 'asked_for_human') return 'human';
  if (decision === 'out_of_scope') return 'outOfScope';
  if (decision === 'clarify') {
    if (q.kind === 'ambiguous') return offered.filter((d) => (q.options ?? []).some((k) => documents.get(k) === d)).length >= 2 ? 'right' : 'clarified';
    return 'clarified';
  }
  if (decision === 'answer' && sourceDoc !== null) {
    if (q.kind === 'answerable' || q.kind === 'paraphrase') return documents.get(q.answer!) === sourceDoc ? 'right' : 'wrong';
    if (q.kind === 'ambiguous') return (q.options ?? []).some((k) => documents.get(k) === sourceDoc) ? 'right' : 'wrong';
    return 'wrong';
  }
  return 'handedOver';
}

/** What the kind asks for. */
function isGood(q: TinyQuestion, o: Outcome): boolean {
  switch (q.kind) {
    case 'answerable': case 'paraphrase': case 'ambiguous': return o === 'right';
    case 'unanswerable': return o === 'handedOver' || o === 'outOfScope';
    case 'off_topic': return o === 'outOfScope' || o === 'greeted';
    case 'greeting': return o === 'greeted';
    case 'human': return o === 'human';
  }
}

function describe(kind: Group, x: Tally): string {
  const n = x.questions;
  if (kind === 'answerable' || kind === 'paraphrase') return `right ${pct(x.right, n)}, wrong ${pct(x.wrong, n)}, asked which one ${pct(x.clarified, n)}, handed over ${pct(x.handedOver, n)}, out of scope ${pct(x.outOfScope, n)}`;
  if (kind === 'unanswerable') return `answered ${pct(x.wrong, n)}, handed over ${pct(x.handedOver, n)}, out of scope ${pct(x.outOfScope, n)}, asked which one ${pct(x.clarified, n)}`;
  if (kind === 'off_topic') return `declined without handoff ${pct(x.outOfScope + x.greeted, n)}, handed over ${pct(x.handedOver, n)}, answered ${pct(x.wrong, n)}, asked which one ${pct(x.clarified, n)}`;
  if (kind === 'ambiguous') return `asked which one (or answered from a fitting article) ${pct(x.right, n)}, asked with other options ${pct(x.clarified, n)}, wrong ${pct(x.wrong, n)}, handed over ${pct(x.handedOver, n)}, out of scope ${pct(x.outOfScope, n)}`;
  if (kind === 'greeting') return `greeted ${pct(x.greeted, n)}`;
  return `handed over as asked ${pct(x.human, n)}`;
}

function summaryRows(name: string, heldOut: boolean, t: Map<Group, Tally>): Row[] {
  const sum = (kinds: Group[]) => kinds.reduce((acc, k) => {
    const x = t.get(k);
    if (x) for (const key of Object.keys(acc) as (keyof Tally)[]) acc[key] += x[key];
    return acc;
  }, empty());
  const a = sum(['answerable', 'paraphrase']);
  const u = sum(['unanswerable']);
  const o = sum(['off_topic']);
  const g = sum(['greeting']);
  const target = (text: string, ok: boolean) => (heldOut ? { target: text, ok } : {});
  const rows: Row[] = [
    { section: 'trust', metric: `${name}: answerable (${a.questions}) right / wrong / handed over / asked which one`, value: `${pct(a.right, a.questions)} / ${pct(a.wrong, a.questions)} / ${pct(a.handedOver + a.outOfScope, a.questions)} / ${pct(a.clarified, a.questions)}`, ...target('≥ 85 % / ≤ 3 %', a.right >= 0.85 * a.questions && a.wrong <= 0.03 * a.questions) },
    { section: 'trust', metric: `${name}: unanswerable in-domain (${u.questions}) answered`, value: pct(u.wrong, u.questions), ...target('≤ 2 %', u.wrong <= 0.02 * u.questions) },
    { section: 'trust', metric: `${name}: off-topic (${o.questions}) declined without handoff`, value: pct(o.outOfScope + o.greeted, o.questions), ...target('≥ 95 %', o.outOfScope + o.greeted >= 0.95 * o.questions) },
  ];
  if (g.questions) rows.push({ section: 'trust', metric: `${name}: greetings (${g.questions}) greeted`, value: pct(g.greeted, g.questions), ...target('100 %', g.greeted === g.questions) });
  return rows;
}

/** A built-in agent at the default threshold, as a new company has it. */
export function profile(companyId: number, knowledgeBaseId: number): AgentProfile {
  return {
    agentId: 1, companyId, provider: 'builtin', knowledgeBaseId, systemPrompt: '', modelName: null, baseUrl: null, apiKeySealed: null, pricing: null, maxConcurrency: null,
    handoffMessage: undefined, onNoAnswer: 'handoff', fallbackMessage: null, relevanceThreshold: DEFAULT_RELEVANCE_THRESHOLD, greeting: null, debounceMs: 0, hours: null, version: 1,
    outOfScopeText: null, knowledgePassages: 5,
  };
}

async function dumpEvidence(file: string, deps: AnswerDeps, base: Awaited<ReturnType<typeof baseInfo>>, set: string, tiny: TinyBase, q: TinyQuestion, documents: Map<string, number>): Promise<void> {
  const text = smallTalkOf(q.text).question || q.text;
  const found = (await bestKnowledgeMatches(deps.sql, [{ companyId: base.companyId, knowledgeBaseId: base.id, query: text }]))[0] ?? null;
  const e = await answerEvidence(deps, base, text, found);
  const passages = e.passages.map((p) => ({ documentId: p.documentId, title: p.title, confidence: p.confidence, lexical: p.lexical, semantic: p.semantic }));
  appendFileSync(file, `${JSON.stringify({ set, base: tiny.key, language: tiny.language, articles: tiny.articles.length, text: q.text, kind: q.kind, answer: q.answer ? documents.get(q.answer) : null, options: (q.options ?? []).map((k) => documents.get(k)), known: e.known, semantic: e.semantic, passages })}\n`);
}

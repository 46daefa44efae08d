import { builtinAnswer, DEFAULT_RELEVANCE_THRESHOLD, type AgentProfile } from '../../lib/agents/answer.js';
import { ensureDatabase, migrate, openDatabase, openSqlPool } from '../../lib/db.js';
import type { KnowledgeBaseInfo } from '../../lib/knowledge/retrieve.js';
import { VectorIndex } from '../../lib/knowledge/vectors.js';
import { SecretBox } from '../../lib/secrets.js';
import { DOCUMENTS, QUESTIONS } from '../knowledge/help-centre.js';
import { HELD_OUT_QUESTIONS } from '../knowledge/held-out.js';
import { TELECOM_DOCUMENTS, TELECOM_QUESTIONS } from '../knowledge/telecom.js';
import { DEV_ANSWERABLE } from '../knowledge/trust-dev-answerable.js';
import { DEV_GREETED_QUESTIONS, DEV_SMALL_TALK, DEV_UNANSWERABLE } from '../knowledge/trust-dev.js';
import { HELD_OUT_GREETED_QUESTIONS, HELD_OUT_SMALL_TALK, HELD_OUT_UNANSWERABLE } from '../knowledge/trust-held-out.js';
import { newScenario } from '../lib/env.js';
import { baseInfo, createBase, createCompany, loadLabelled } from '../lib/help-centres.js';
import { note, progress } from '../lib/progress.js';
import { runRequestChecks } from './trust-requests.js';
import { runTinyTrust } from './trust-tiny.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Trust: does the built-in agent answer only when its help centre answers the question
 * (contract.md § Answers a company can trust)? Two help centres (Northwind Coffee and Volna
 * telecom, English and Russian documents, bench/knowledge/) in their own bases; every
 * question is put to the agent's real answer path (lib/agents/answer.ts builtinAnswer, the
 * statement the worker runs) at each threshold of a sweep, and the answer is judged:
 * - answerable questions (labelled with the section that answers them): answered from that
 *   section (right), from another (wrong), or not answered (handed off);
 * - unanswerable questions (nothing in the help centre answers them): answered at all;
 * - small talk (only a greeting or thanks): greeted.
 *
 * The development sets (bench/knowledge/trust-dev.ts, trust-dev-answerable.ts and the labelled
 * Northwind questions the ranking was tuned on) are the only ones tuning looked at; the held-out sets
 * (trust-held-out.ts, held-out.ts, telecom.ts) were written by someone who saw neither the
 * decision code nor its results, and their misses are not printed.
 */
const LANGUAGE = 'russian';
const THRESHOLDS = Array.from({ length: 15 }, (_, i) => Math.round((0.2 + i * 0.05) * 100) / 100);

type Base = 'northwind' | 'volna';
type Expect = { answer: string } | 'none' | 'small_talk';
interface Item {
  question: string;
  base: Base;
  expect: Expect;
}
interface TrustSet {
  name: string;
  heldOut: boolean;
  items: Item[];
}

/** One question at one threshold. */
type Outcome = 'right' | 'wrong' | 'handed_off' | 'greeted';

interface Tally {
  questions: number;
  right: number;
  wrong: number;
  handedOff: number;
  greeted: number;
}

const answerable = (base: Base, list: { question: string; answer: string }[]): Item[] => list.map((q) => ({ question: q.question, base, expect: { answer: q.answer } }));

function sets(): TrustSet[] {
  return [
    { name: 'dev: Northwind answerable (the ranking\'s labelled set)', heldOut: false, items: answerable('northwind', QUESTIONS) },
    { name: 'dev: natural answerable, both help centres', heldOut: false, items: DEV_ANSWERABLE.map((q) => ({ question: q.question, base: q.base, expect: { answer: q.answer } })) },
    { name: 'dev: greeted questions', heldOut: false, items: DEV_GREETED_QUESTIONS.map((q) => ({ question: q.question, base: q.base, expect: { answer: q.answer } })) },
    { name: 'dev: unanswerable', heldOut: false, items: DEV_UNANSWERABLE.map((q) => ({ question: q.question, base: q.base, expect: 'none' })) },
    { name: 'dev: small talk', heldOut: false, items: DEV_SMALL_TALK.map((q) => ({ question: q.message, base: 'northwind', expect: 'small_talk' })) },
    { name: 'held out: Northwind answerable', heldOut: true, items: answerable('northwind', HELD_OUT_QUESTIONS) },
    { name: 'held out: Volna answerable', heldOut: true, items: answerable('volna', TELECOM_QUESTIONS) },
    { name: 'held out: greeted questions', heldOut: true, items: HELD_OUT_GREETED_QUESTIONS.map((q) => ({ question: q.question, base: q.base, expect: { answer: q.answer } })) },
    { name: 'held out: unanswerable, unrelated', heldOut: true, items: HELD_OUT_UNANSWERABLE.filter((q) => q.kind === 'unrelated').map((q) => ({ question: q.question, base: q.base, expect: 'none' })) },
    { name: 'held out: unanswerable, near misses', heldOut: true, items: HELD_OUT_UNANSWERABLE.filter((q) => q.kind === 'near_miss').map((q) => ({ question: q.question, base: q.base, expect: 'none' })) },
    { name: 'held out: small talk', heldOut: true, items: HELD_OUT_SMALL_TALK.map((q) => ({ question: q.message, base: 'volna', expect: 'small_talk' })) },
  ];
}

const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(1)} %` : '–');

export async function runTrust(_ctx: BenchContext): Promise<SectionResult> {
  const s = newScenario('trust');
  await ensureDatabase(s.databaseUrl);
  const orm = await openDatabase({ url: s.databaseUrl, poolMax: 4 });
  const sql = openSqlPool({ url: s.databaseUrl, poolMax: 4 });
  try {
    await migrate(orm);
    const company = await createCompany(sql, 'Trust');
    const northwindBase = await createBase(sql, company, 'Northwind Coffee', LANGUAGE, null);
    const northwindLabels = await loadLabelled(orm, sql, northwindBase, DOCUMENTS);
    const volnaBase = await createBase(sql, company, 'Volna', LANGUAGE, null);
    const volnaLabels = await loadLabelled(orm, sql, volnaBase, TELECOM_DOCUMENTS);
    const bases: Record<Base, { info: KnowledgeBaseInfo; labels: Map<string, number> }> = {
      northwind: { info: await baseInfo(sql, northwindBase), labels: northwindLabels },
      volna: { info: await baseInfo(sql, volnaBase), labels: volnaLabels },
    };
    const deps = { sql, vectors: new VectorIndex(), secrets: new SecretBox([Buffer.alloc(32)]), urls: { allowPrivateUrls: true, helpdeskGlobalUrl: '', helpdeskEuropeUrl: '' } };
    const agentAt = (base: Base, threshold: number): AgentProfile => ({
      agentId: 1, companyId: company, provider: 'builtin', knowledgeBaseId: bases[base].info.id, systemPrompt: '', modelName: null, baseUrl: null, apiKeySealed: null, pricing: null,
      maxConcurrency: null, handoffMessage: undefined, onNoAnswer: 'handoff', fallbackMessage: null, relevanceThreshold: threshold, greeting: null, debounceMs: 0, hours: null, version: 1, outOfScopeText: null, knowledgePassages: 5,
    });

    // TRUST_DEV_ONLY=1: the development sets alone (while tuning: the held-out figures are not looked at).
    const all = sets().filter((set) => process.env.TRUST_DEV_ONLY !== '1' || !set.heldOut);
    const results: { set: TrustSet; byThreshold: Map<number, Tally> }[] = [];
    let asked = 0;
    const total = all.reduce((n, set) => n + set.items.length, 0) * THRESHOLDS.length;
    for (const set of all) {
      const byThreshold = new Map<number, Tally>();
      for (const threshold of THRESHOLDS) {
        const tally: Tally = { questions: set.items.length, right: 0, wrong: 0, handedOff: 0, greeted: 0 };
        for (const item of set.items) {
          if (++asked % 200 === 0) progress('trust', `${asked.toLocaleString('en')} / ${total.toLocaleString('en')} answers`);
          const base = bases[item.base];
          const out = await builtinAnswer(deps, agentAt(item.base, threshold), base.info, item.question);
          const kind = out.decision?.kind;
          let outcome: Outcome;
          if (kind === 'greeting' || kind === 'thanks') outcome = 'greeted';
          else if (kind !== 'answer' || out.kind !== 'reply') outcome = 'handed_off';
          else {
            const chunkId = out.sources?.[0]?.chunkId;
            outcome = typeof item.expect === 'object' && chunkId === base.labels.get(item.expect.answer) ? 'right' : 'wrong';
          }
          if (outcome === 'right') tally.right++;
          else if (outcome === 'wrong') tally.wrong++;
          else if (outcome === 'handed_off') tally.handedOff++;
          else tally.greeted++;
        }
        byThreshold.set(threshold, tally);
      }
      results.push({ set, byThreshold });
    }

    // The curve: per set, per threshold.
    for (const { set, byThreshold } of results) {
      const head = set.items[0]!.expect;
      const lines = THRESHOLDS.map((t) => {
        const x = byThreshold.get(t)!;
        if (head === 'none') return `${t.toFixed(2)}: answered ${pct(x.right + x.wrong, x.questions)}`;
        if (head === 'small_talk') return `${t.toFixed(2)}: greeted ${pct(x.greeted, x.questions)}`;
        return `${t.toFixed(2)}: right ${pct(x.right, x.questions)}, wrong ${pct(x.wrong, x.questions)}, handed off ${pct(x.handedOff, x.questions)}`;
      });
      note('trust', `${set.name} (${set.items.length}):\n    ${lines.join('\n    ')}`);
    }

    const rows: Row[] = [];
    const at = DEFAULT_RELEVANCE_THRESHOLD;
    for (const { set, byThreshold } of results) {
      const x = byThreshold.get(at)!;
      const kind = set.items[0]!.expect;
      const label = `${set.name} (${x.questions}) at the default threshold ${at}`;
      if (kind === 'none') {
        const answered = (x.right + x.wrong) / x.questions;
        rows.push({ section: 'trust', metric: `${label}: answered`, value: pct(x.right + x.wrong, x.questions), ...(set.heldOut ? { target: '≤ 2 %', ok: answered <= 0.02 } : {}) });
      } else if (kind === 'small_talk') {
        rows.push({ section: 'trust', metric: `${label}: greeted`, value: pct(x.greeted, x.questions), ...(set.heldOut ? { target: '100 %', ok: x.greeted === x.questions } : {}) });
      } else {
        rows.push({
          section: 'trust',
          metric: `${label}: right / wrong / handed off`,
          value: `${pct(x.right, x.questions)} / ${pct(x.wrong, x.questions)} / ${pct(x.handedOff + x.greeted, x.questions)}`,
          ...(set.heldOut ? { target: '≥ 85 % / ≤ 5 % / –', ok: x.right / x.questions >= 0.85 && x.wrong / x.questions <= 0.05 } : {}),
        });
      }
    }
    const data = Object.fromEntries(results.map(({ set, byThreshold }) => [set.name, Object.fromEntries([...byThreshold].map(([t, x]) => [t.toFixed(2), x]))]));
    const tiny = await runTinyTrust(orm, sql, deps);
    const requests = await runRequestChecks(orm, sql, deps);
    return { rows: [...rows, ...tiny.rows, ...requests.rows], data: { thresholds: THRESHOLDS, defaultThreshold: at, sets: data, tiny: tiny.data, requests: requests.data } };
  } finally {
    await sql.end();
    await orm.close(true);
    await s.dispose();
  }
}

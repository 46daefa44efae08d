// Test agent: put questions to an agent before customers do. A case is a question and either
// the phrases its answer must contain, or "must hand off": a question the agent must not
// answer. The results say per case what the agent did, how sure it was, where the answer
// came from, and whether the case passed and why. Nothing is sent to anyone
// (POST /api/agents/:id/evaluations). The cases are kept per agent
// (GET|PUT /api/agents/:id/evaluation-cases): saved with "Save cases" and before each run, so
// they are there after a reload; "Run all" runs them, and each result says what changed since
// the agent's previous evaluation (newly passing, newly failing, the answer changed).
import { api, apiAll, seg } from '../api.js';
import { confidenceBadge, confidenceText } from '../confidence.js';
import { optionTitles } from '../decisions.js';
import { busy, field, h, messages, replace, table, time, uid } from '../dom.js';

const HANDOFF = 'handoff';
const phrasesOf = (text) => text.split(/[,;\n]/).map((p) => p.trim()).filter(Boolean);
const mustHandOff = (c) => c.expect === HANDOFF;
/** Decisions that are not an answer from the knowledge: a must-hand-off case passes on them (lib/agents/evaluate.ts). */
const NOT_ANSWERED = new Set(['no_answer', 'asked_for_human', 'out_of_scope', 'clarify']);

const HANDOFF_REASON = {
  no_answer: 'no answer in the knowledge base',
  asked_for_human: 'the customer asked for a person',
  no_credit: 'the balance is used up',
  spend_cap: 'the daily spend cap is reached',
  model_failed: 'the model did not answer',
  outside_hours: 'outside business hours',
};

/** What the agent did, in the words a support lead uses. */
function outcomeText(c) {
  if (c.decision === 'greeting') return 'Greeted the customer';
  if (c.decision === 'thanks') return 'Answered the thanks';
  if (c.decision === 'asked_for_human') return 'Handed to a person: the customer asked for one';
  if (c.decision === 'out_of_scope') return 'Not answered: out of scope (said what it can help with, no handoff)';
  if (c.decision === 'clarify') {
    const titles = optionTitles(c.options);
    return titles.length ? `Not answered yet: asked which one: ${titles.join(' / ')}` : 'Not answered yet: asked which one';
  }
  if (c.decision === 'no_answer') return c.outcome === 'handoff' ? 'Not answered: handed to a person' : 'Not answered: said the fallback text';
  if (c.outcome === 'handoff') return `Handed to a person: ${HANDOFF_REASON[c.reason] ?? c.reason ?? 'no reason given'}`;
  if (c.outcome === 'close') return 'Closed the conversation';
  return c.decision === 'answer' || c.sources?.length ? 'Answered from the knowledge base' : 'Answered';
}

/** Why the case passed or failed. */
function verdictText(c) {
  const answered = !NOT_ANSWERED.has(c.decision) && c.outcome !== 'handoff';
  if (mustHandOff(c)) return c.pass ? 'It did not answer, as it must not.' : answered ? 'It answered a question it must not answer.' : 'It did not hand off.';
  if (c.pass) return c.expect?.length ? 'The answer has every expected phrase.' : 'It answered.';
  if (c.decision === 'no_answer') return 'It found no answer.';
  if (c.decision === 'out_of_scope') return 'It took the question for one not about your business.';
  if (c.decision === 'clarify') return 'It asked which article was meant instead of answering.';
  if (c.missing?.length) return `Missing: ${c.missing.join(', ')}`;
  return 'It did not answer.';
}

/** A kept case as the form edits it, and back. */
const formCase = (c) => ({ question: c.question, expect: Array.isArray(c.expect) ? c.expect.join(', ') : '', handoff: mustHandOff(c) });
const apiCase = (c) => ({ question: c.question.trim(), expect: c.handoff ? HANDOFF : phrasesOf(c.expect) });
const sameExpect = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * What changed for a case since the previous evaluation (the same question, expecting the same):
 * null when the case is new there, or nothing changed.
 */
function changeOf(c, previous) {
  if (!previous) return null;
  const before = previous.cases?.find((p) => p.question === c.question && (p.expect === null || sameExpect(p.expect, c.expect)));
  if (!before) return { kind: 'new', text: 'New case' };
  if (c.pass && !before.pass) return { kind: 'passing', text: 'Newly passing' };
  if (!c.pass && before.pass) return { kind: 'failing', text: 'Newly failing' };
  if (c.answer !== before.answer) return { kind: 'answer', text: 'Answer changed', before: before.answer };
  return null;
}

function changesSummary(evaluation, previous) {
  if (!previous) return 'First run: nothing to compare with yet.';
  const counts = { passing: 0, failing: 0, answer: 0, new: 0 };
  for (const c of evaluation.cases ?? []) {
    const change = changeOf(c, previous);
    if (change) counts[change.kind]++;
  }
  const parts = [
    counts.passing && `${counts.passing} newly passing`,
    counts.failing && `${counts.failing} newly failing`,
    counts.answer && `${counts.answer} answer${counts.answer === 1 ? '' : 's'} changed`,
    counts.new && `${counts.new} new case${counts.new === 1 ? '' : 's'}`,
  ].filter(Boolean);
  return `Since the run of ${new Date(previous.createdAt).toLocaleString()}: ${parts.length ? parts.join(', ') : 'no change'}.`;
}

const CHANGE_BADGE = { passing: 'ok', failing: 'failing', answer: 'pending', new: 'off' };

function expectationText(c) {
  if (mustHandOff(c)) return 'Must hand off';
  if (Array.isArray(c.expect) && c.expect.length) return `Expects: ${c.expect.join(', ')}`;
  return Array.isArray(c.expect) ? 'Expects an answer' : null;
}

export function render(root, { signal }) {
  // `previous`: the evaluation before the one shown (what its changes are measured against); `dirty`: cases edited and not
  // saved, for the agent `casesAgent`.
  // `edits`: counts edits and saves, so saved cases read before one of them never replace what it left.
  const state = { agents: [], cases: [], previous: null, dirty: false, casesAgent: null, edits: 0, loading: 0 };
  const agentSelect = h('select', { name: 'agent' });
  // A fieldset: disabled while an agent's saved cases load, so nothing typed meanwhile is replaced by them.
  const casesEl = h('fieldset', { class: 'cases' });
  const addCase = h('button', { type: 'button', class: 'secondary' }, 'Add case');
  const run = h('button', { type: 'submit', class: 'primary' }, 'Run all');
  const saveCases = h('button', { type: 'button', class: 'secondary' }, 'Save cases');
  const savedNote = h('span', { class: 'muted small', 'aria-live': 'polite' });
  const formMsg = messages();
  const resultsEl = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { method: 'post', class: 'panel', 'aria-labelledby': 'cases-title' },
    h('h2', { id: 'cases-title' }, 'Cases'),
    field('Agent', agentSelect),
    h(
      'p',
      { class: 'cases-hint' },
      'Write a question as a customer would. Either list phrases the answer must contain, or tick ',
      h('strong', {}, 'Must hand off'),
      ' for a question the agent must not answer (your help centre does not say, or it is not your business): that case passes when the agent does not answer it: it hands the customer to a person, says its fallback text, declines a question that is not about your business, or asks which article was meant.',
    ),
    casesEl,
    h('div', { class: 'actions' }, addCase, saveCases, run, savedNote),
    formMsg.el,
  );

  function caseRow(c, i) {
    const n = i + 1;
    const question = h('input', { type: 'text', name: `question-${i}`, maxlength: '2000', value: c.question });
    const expect = h('input', { type: 'text', name: `expect-${i}`, maxlength: '2000', value: c.expect, placeholder: 'phrases, separated by commas' });
    const handoff = h('input', { type: 'checkbox', id: uid('handoff'), name: `handoff-${i}`, checked: c.handoff, 'aria-label': `Must hand off (case ${n})` });
    const sync = () => {
      expect.disabled = c.handoff;
      expect.placeholder = c.handoff ? 'the agent must not answer' : 'phrases, separated by commas';
    };
    question.addEventListener('input', () => {
      c.question = question.value;
      edited();
    });
    expect.addEventListener('input', () => {
      c.expect = expect.value;
      edited();
    });
    handoff.addEventListener('change', () => {
      c.handoff = handoff.checked;
      sync();
      edited();
    });
    sync();
    const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove case ${n}` }, 'Remove');
    del.addEventListener('click', () => {
      state.cases.splice(i, 1);
      edited();
      renderCases();
    });
    return h(
      'div',
      { class: 'case-row' },
      field(`Question ${n}`, question),
      field(`Expected phrases ${n}`, expect),
      h('div', { class: 'field check handoff' }, handoff, h('label', { for: handoff.id }, 'Must hand off')),
      del,
    );
  }

  const blankCase = () => ({ question: '', expect: '', handoff: false });
  function renderCases() {
    if (!state.cases.length) state.cases.push(blankCase());
    replace(casesEl, state.cases.map(caseRow));
  }
  function edited() {
    state.edits += 1;
    state.dirty = true;
    state.casesAgent = agentSelect.value;
    savedNote.textContent = 'Unsaved changes';
  }

  /** The cases written so far (those with a question), kept for the agent; what is kept. */
  async function save() {
    const cases = state.cases.filter((c) => c.question.trim()).map(apiCase);
    const kept = await api('PUT', `/api/agents/${seg(agentSelect.value)}/evaluation-cases`, { cases }, { signal });
    state.edits += 1;
    state.dirty = false;
    savedNote.textContent = `${kept.cases.length} case${kept.cases.length === 1 ? '' : 's'} saved`;
    return kept.cases;
  }

  saveCases.addEventListener('click', async () => {
    if (!agentSelect.value) return formMsg.error(new Error('Create an agent first.'));
    try {
      await busy(saveCases, save);
      formMsg.ok('Cases saved for this agent.');
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  });

  addCase.addEventListener('click', () => {
    state.cases.push(blankCase());
    renderCases();
    casesEl.querySelectorAll('input[name^="question-"]')[state.cases.length - 1]?.focus();
  });

  function summary(evaluation) {
    const cases = evaluation.cases ?? [];
    const handoffs = cases.filter(mustHandOff);
    const answers = cases.filter((c) => !mustHandOff(c));
    const parts = [`${evaluation.passed} passed, ${evaluation.failed} failed`];
    if (answers.length && handoffs.length) parts.push(`questions to answer: ${answers.filter((c) => c.pass).length} of ${answers.length} passed`);
    if (handoffs.length) parts.push(`must hand off: ${handoffs.filter((c) => c.pass).length} of ${handoffs.length} handed off`);
    return parts.join(' · ');
  }

  function renderResults(evaluation, previous) {
    if (!evaluation) {
      replace(resultsEl);
      return;
    }
    replace(
      resultsEl,
      h('h2', { id: 'results-title' }, 'Results'),
      h('p', { class: 'summary' }, h('strong', {}, summary(evaluation)), h('span', { class: 'muted' }, ' · ', time(evaluation.createdAt))),
      h('p', { class: 'changes-summary' }, changesSummary(evaluation, previous)),
      table(
        '!Test results',
        [
          {
            label: 'Question',
            cell: (c) => h('div', {}, h('p', { class: 'answer' }, c.question), expectationText(c) ? h('p', { class: 'expectation muted small' }, expectationText(c)) : null),
          },
          {
            label: 'What the agent did',
            cell: (c) =>
              h(
                'div',
                {},
                h('p', { class: 'outcome' }, outcomeText(c)),
                confidenceBadge(c.confidence),
                // A question back names its articles already; a near miss shows the passage that was not good enough.
                c.confidence == null && c.bestMatch && c.decision !== 'clarify'
                  ? h('p', { class: 'closest muted small' }, `Closest passage: ${c.bestMatch.title} (${confidenceText(c.bestMatch.confidence)})`)
                  : null,
              ),
          },
          { label: 'Answer', cell: (c) => h('p', { class: 'answer' }, c.answer) },
          { label: 'Sources', cell: (c) => (c.sources?.length ? h('ul', { class: 'plain' }, c.sources.map((s) => h('li', { title: `chunk ${s.chunkId}` }, s.title))) : h('span', { class: 'muted' }, '—')) },
          {
            label: 'Result',
            cell: (c) => h('div', {}, h('span', { class: ['badge', c.pass ? 'pass' : 'fail'] }, c.pass ? 'Pass' : 'Fail'), h('p', { class: c.pass ? 'why muted small' : 'why doc-error' }, verdictText(c))),
          },
          {
            label: 'Since last run',
            cell: (c) => {
              const change = changeOf(c, previous);
              if (!change) return h('span', { class: 'muted' }, previous ? 'No change' : '—');
              return h(
                'div',
                { class: 'change', dataset: { change: change.kind } },
                h('span', { class: ['badge', CHANGE_BADGE[change.kind]] }, change.text),
                change.before !== undefined ? h('p', { class: 'muted small' }, `Before: ${change.before}`) : null,
              );
            },
          },
        ],
        evaluation.cases ?? [],
      ),
    );
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const cases = state.cases.filter((c) => c.question.trim()).map(apiCase);
    if (!agentSelect.value) {
      formMsg.error(new Error('Create an agent first.'));
      return;
    }
    if (!cases.length) {
      formMsg.error(new Error('Write at least one question.'));
      casesEl.querySelector('input')?.focus();
      return;
    }
    try {
      formMsg.ok('Asking the agent…');
      const agentId = seg(agentSelect.value);
      const { evaluation } = await busy(run, async () => {
        // Run as kept: the cases are saved first, so the page shows them again after a reload.
        if (state.dirty) await save();
        // What this run is compared with: the agent's latest evaluation until now.
        const { evaluations } = await api('GET', `/api/agents/${agentId}/evaluations?limit=1`, undefined, { signal });
        state.previous = evaluations?.[0] ?? null;
        return api('POST', `/api/agents/${agentId}/evaluations`, { cases }, { signal });
      });
      formMsg.ok(`Test finished: ${evaluation.passed} passed, ${evaluation.failed} failed.`);
      renderResults(evaluation, state.previous);
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  });

  /** The agent's saved cases in the form, and its latest run compared with the one before. */
  async function showAgent() {
    if (!agentSelect.value) return renderResults(null);
    const controls = [casesEl, addCase, saveCases, run];
    state.loading += 1;
    for (const c of controls) c.disabled = true;
    try {
      const agentId = seg(agentSelect.value);
      const asked = { agent: agentSelect.value, edits: state.edits };
      const [{ cases }, { evaluations }] = await Promise.all([
        api('GET', `/api/agents/${agentId}/evaluation-cases`, undefined, { signal }),
        api('GET', `/api/agents/${agentId}/evaluations?limit=2`, undefined, { signal }),
      ]);
      if (asked.agent !== agentSelect.value) return; // another agent was chosen meanwhile: its own look-up shows it
      // Typing or a save since they were asked for is kept (it is this agent's, and newer).
      if (asked.edits === state.edits && !(state.dirty && state.casesAgent === agentSelect.value)) {
        state.cases = (cases ?? []).map(formCase);
        state.dirty = false;
        state.casesAgent = agentSelect.value;
        savedNote.textContent = state.cases.length ? `${state.cases.length} saved case${state.cases.length === 1 ? '' : 's'}` : '';
        renderCases();
      }
      state.previous = evaluations?.[1] ?? null;
      renderResults(evaluations?.[0] ?? null, state.previous);
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    } finally {
      state.loading -= 1;
      if (state.loading === 0) for (const c of controls) c.disabled = false;
    }
  }
  agentSelect.addEventListener('change', showAgent);

  async function load() {
    try {
      const { agents } = await apiAll('/api/agents', 'agents', { signal });
      state.agents = agents ?? [];
      replace(agentSelect, state.agents.length ? state.agents.map((a) => h('option', { value: String(a.id) }, a.name)) : h('option', { value: '' }, 'No agents yet'));
      await showAgent();
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Test agent'),
    h(
      'p',
      { class: 'lead muted' },
      'Ask an agent questions before customers do: check that it answers what your help centre says, and hands over what it does not. Nothing is sent to anyone; a model agent’s calls are billed as usual.',
    ),
    form,
    h('section', { class: 'panel', 'aria-labelledby': 'results-title' }, resultsEl),
  );
  renderCases();
  load();
}

// Test agent: put questions to an agent before customers do. Each case is a question and the
// phrases its answer must contain; the results show pass / fail, the answer and its sources.
// Nothing is sent to anyone (POST /api/agents/:id/evaluations).
import { api, apiAll, seg } from '../api.js';
import { busy, field, h, messages, replace, table, time } from '../dom.js';

const phrasesOf = (text) => text.split(/[,;\n]/).map((p) => p.trim()).filter(Boolean);

export function render(root, { signal }) {
  const state = { agents: [], cases: [] };
  const agentSelect = h('select', { name: 'agent' });
  const casesEl = h('div');
  const addCase = h('button', { type: 'button', class: 'secondary' }, 'Add case');
  const run = h('button', { type: 'submit', class: 'primary' }, 'Run test');
  const formMsg = messages();
  const resultsEl = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { method: 'post', class: 'panel', 'aria-labelledby': 'cases-title' },
    h('h2', { id: 'cases-title' }, 'Cases'),
    field('Agent', agentSelect),
    casesEl,
    h('div', { class: 'actions' }, addCase, run),
    formMsg.el,
  );

  function caseRow(c, i) {
    const question = h('input', { type: 'text', name: `question-${i}`, maxlength: '2000', value: c.question });
    const expect = h('input', { type: 'text', name: `expect-${i}`, maxlength: '2000', value: c.expect, placeholder: 'phrases, separated by commas' });
    question.addEventListener('input', () => (c.question = question.value));
    expect.addEventListener('input', () => (c.expect = expect.value));
    const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove case ${i + 1}` }, 'Remove');
    del.addEventListener('click', () => {
      state.cases.splice(i, 1);
      renderCases();
    });
    return h('div', { class: 'case-row' }, field(`Question ${i + 1}`, question), field(`Expected phrases ${i + 1}`, expect), del);
  }

  function renderCases() {
    if (!state.cases.length) state.cases.push({ question: '', expect: '' });
    replace(casesEl, state.cases.map(caseRow));
  }
  addCase.addEventListener('click', () => {
    state.cases.push({ question: '', expect: '' });
    renderCases();
    casesEl.querySelectorAll('input[name^="question-"]')[state.cases.length - 1]?.focus();
  });

  function renderResults(evaluation) {
    if (!evaluation) {
      replace(resultsEl);
      return;
    }
    replace(
      resultsEl,
      h('h2', { id: 'results-title' }, 'Results'),
      h('p', { class: 'muted' }, `${evaluation.passed} passed, ${evaluation.failed} failed · `, time(evaluation.createdAt)),
      table(
        '!Test results',
        [
          { label: 'Question', cell: (c) => c.question },
          {
            label: 'Result',
            cell: (c) => h('div', {}, h('span', { class: ['badge', c.pass ? 'pass' : 'fail'] }, c.pass ? 'Pass' : 'Fail'), c.missing?.length ? h('p', { class: 'doc-error' }, `Missing: ${c.missing.join(', ')}`) : null),
          },
          {
            label: 'Answer',
            cell: (c) => h('div', {}, h('p', { class: 'answer' }, c.answer), c.outcome === 'handoff' ? h('span', { class: 'tag' }, `handed over: ${c.reason}`) : null),
          },
          { label: 'Sources', cell: (c) => (c.sources?.length ? h('ul', { class: 'plain' }, c.sources.map((s) => h('li', { title: `chunk ${s.chunkId}` }, s.title))) : h('span', { class: 'muted' }, '—')) },
        ],
        evaluation.cases ?? [],
      ),
    );
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const cases = state.cases.filter((c) => c.question.trim()).map((c) => ({ question: c.question.trim(), expect: phrasesOf(c.expect) }));
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
      const { evaluation } = await busy(run, () => api('POST', `/api/agents/${seg(agentSelect.value)}/evaluations`, { cases }, { signal }));
      formMsg.ok(`Test finished: ${evaluation.passed} passed, ${evaluation.failed} failed.`);
      renderResults(evaluation);
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  });

  async function showLatest() {
    if (!agentSelect.value) return renderResults(null);
    try {
      const { evaluations } = await api('GET', `/api/agents/${seg(agentSelect.value)}/evaluations?limit=1`, undefined, { signal });
      renderResults(evaluations?.[0] ?? null);
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  }
  agentSelect.addEventListener('change', showLatest);

  async function load() {
    try {
      const { agents } = await apiAll('/api/agents', 'agents', { signal });
      state.agents = agents ?? [];
      replace(agentSelect, state.agents.length ? state.agents.map((a) => h('option', { value: String(a.id) }, a.name)) : h('option', { value: '' }, 'No agents yet'));
      await showLatest();
    } catch (err) {
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Test agent'),
    h('p', { class: 'lead muted' }, 'Ask an agent questions before customers do: each answer must contain the phrases you expect. Nothing is sent to anyone; a model agent’s calls are billed as usual.'),
    form,
    h('section', { class: 'panel', 'aria-labelledby': 'results-title' }, resultsEl),
  );
  renderCases();
  load();
}

// Knowledge gaps of one knowledge base (#/knowledge/<id>/gaps, GET /api/knowledge-bases/:id/gaps):
// the questions customers asked that it could not answer, similar ones grouped, most asked
// first, over a period; each with the conversations it came from, the closest passage found,
// and "Write an article", which opens the base's add-document form with the question filled in.
import { api, seg } from '../api.js';
import { busy, field, h, messages, pager, replace, table, time } from '../dom.js';

const DAY_MS = 86_400_000;
const DEFAULT_DAYS = 30;
/** Gaps per page (the API's default page). */
const PAGE = 50;
/** Conversation links shown in a row; the rest are counted. */
const SHOWN_CONVERSATIONS = 5;

const dateOf = (ms) => new Date(ms).toISOString().slice(0, 10);
const percent = (x) => `${Math.round(x * 100)}%`;

/** Where "Write an article" leads: the base's page with its add-document form filled in. */
export const writeArticleHash = (knowledgeBaseId, question) => `#/knowledge/${seg(knowledgeBaseId)}/write/${seg(question)}`;

export function render(root, { signal, navigate }, knowledgeBaseId) {
  const today = Date.now();
  const from = h('input', { type: 'date', name: 'from', value: dateOf(today - (DEFAULT_DAYS - 1) * DAY_MS), required: true });
  const to = h('input', { type: 'date', name: 'to', value: dateOf(today), required: true });
  const show = h('button', { type: 'submit', class: 'primary' }, 'Show');
  const form = h('form', { method: 'get', class: 'row filter', 'aria-label': 'Period' }, field('From', from), field('To', to), show);
  const msg = messages();
  const heading = h('h1', {}, 'Knowledge gaps');
  const back = h('a', { href: `#/knowledge/${seg(knowledgeBaseId)}` }, 'Back to the knowledge base');
  const intro = h('p', { class: 'lead muted' }, 'Questions customers asked that this knowledge base could not answer, similar ones grouped, most asked first. Write an article for the frequent ones: the agent answers from it next time.');
  const summary = h('p', { class: 'muted small', role: 'status' });
  const listEl = h('div');
  const pages = pager(PAGE, () => load());
  let generation = 0;

  function bestMatchCell(g) {
    if (!g.bestMatch) return h('span', { class: 'muted' }, 'nothing found');
    return h('div', {}, g.bestMatch.title, h('span', { class: 'tag', title: 'How well it answers the question' }, `${percent(g.bestMatch.confidence)} confidence`));
  }

  function conversationsCell(g) {
    const shown = g.conversationIds.slice(0, SHOWN_CONVERSATIONS);
    const more = g.count > shown.length ? h('span', { class: 'muted small' }, ` and ${g.count - shown.length} more`) : null;
    return h('div', {}, shown.map((id, i) => [i ? ', ' : '', h('a', { href: `#/conversations/${seg(id)}`, 'aria-label': `Conversation ${id}` }, `#${id}`)]), more);
  }

  function writeCell(g) {
    const write = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Write an article: ${g.question}` }, 'Write an article');
    write.addEventListener('click', () => navigate(writeArticleHash(knowledgeBaseId, g.question)));
    return write;
  }

  async function load() {
    const gen = ++generation;
    if (!from.value || !to.value) {
      msg.error(new Error('Choose both dates of the period.'));
      return;
    }
    const q = new URLSearchParams({ from: from.value, to: to.value, limit: String(PAGE), offset: String(pages.offset) });
    try {
      const out = await busy(show, () => api('GET', `/api/knowledge-bases/${seg(knowledgeBaseId)}/gaps?${q}`, undefined, { signal }));
      if (gen !== generation) return;
      if (!pages.shown(out.total, out.gaps.length)) return load();
      msg.clear();
      const truncated = out.truncated ? ' Only the newest 5,000 unanswered questions of the period are grouped: choose a shorter period to see older ones.' : '';
      summary.textContent = out.total ? `${out.total} different question${out.total === 1 ? '' : 's'} went unanswered from ${from.value} to ${to.value}.${truncated}` : '';
      replace(
        listEl,
        table(
          'Unanswered questions',
          [
            { label: 'Question', cell: (g) => h('strong', {}, g.question) },
            { label: 'Times asked', class: 'num', cell: (g) => String(g.count) },
            { label: 'Last asked', cell: (g) => time(g.lastAt) },
            { label: 'Closest article', cell: bestMatchCell },
            { label: 'Conversations', cell: conversationsCell },
            { label: 'Action', cell: writeCell },
          ],
          out.gaps,
          {
            empty: `No unanswered questions from ${from.value} to ${to.value}. When a customer asks something this knowledge base cannot answer, the question shows up here.`,
            rowProps: (g) => ({ dataset: { count: String(g.count) } }),
          },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    pages.offset = 0;
    load();
  });

  root.append(heading, h('p', {}, back), intro, form, msg.el, summary, h('section', { 'aria-label': 'Knowledge gaps' }, listEl, pages.el));
  // The base's name in the heading, once known (a base of another company, or deleted, is an error from the list call).
  api('GET', `/api/knowledge-bases/${seg(knowledgeBaseId)}`, undefined, { signal })
    .then(({ knowledgeBase }) => {
      heading.textContent = `Knowledge gaps · ${knowledgeBase.name}`;
      back.textContent = `Back to ${knowledgeBase.name}`;
    })
    .catch(() => {});
  load();
}

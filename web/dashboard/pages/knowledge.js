// Knowledge bases: create, pick one, add / delete its documents, and try a search.
import { api, seg } from '../api.js';
import { busy, field, h, messages, replace, time } from '../dom.js';

/** The snippet as text, with the query's words marked (<mark>), all built from text nodes. */
function snippetNodes(snippet, query) {
  const text = String(snippet ?? '');
  const words = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 2))];
  if (!words.length) return [text];
  const re = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`, 'giu');
  return text.split(re).filter(Boolean).map((part) => (words.includes(part.toLowerCase()) ? h('mark', {}, part) : part));
}

export function render(root, { signal }) {
  const state = { knowledgeBases: [], selectedId: null, documents: [] };
  const listMsg = messages();
  const kbList = h('ul', { class: 'pill-list' });
  const detail = h('section', { class: 'panel', 'aria-labelledby': 'kb-detail-title', hidden: true });

  // ---- create a knowledge base ----
  const kbName = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create knowledge base');
  const createMsg = messages();
  const createForm = h(
    'form',
    { method: 'post', class: 'panel inline-form', 'aria-labelledby': 'new-kb' },
    h('h2', { id: 'new-kb' }, 'New knowledge base'),
    h('div', { class: 'row' }, field('Name', kbName), createButton),
    createMsg.el,
  );
  createForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!kbName.value.trim()) {
      createMsg.error(new Error('Please give the knowledge base a name.'));
      kbName.focus();
      return;
    }
    try {
      const { knowledgeBase } = await busy(createButton, () => api('POST', '/api/knowledge-bases', { name: kbName.value.trim() }, { signal }));
      kbName.value = '';
      state.knowledgeBases.push(knowledgeBase);
      createMsg.ok(`Knowledge base “${knowledgeBase.name}” created.`);
      choose(knowledgeBase.id);
    } catch (err) {
      if (err.name !== 'AbortError') createMsg.error(err);
    }
  });

  function renderKbList() {
    if (!state.knowledgeBases.length) {
      replace(kbList, h('li', { class: 'muted' }, 'No knowledge bases yet.'));
      return;
    }
    replace(
      kbList,
      state.knowledgeBases.map((k) => {
        const b = h('button', { type: 'button', class: 'pill', 'aria-pressed': String(k.id === state.selectedId) }, k.name);
        b.addEventListener('click', () => choose(k.id));
        return h('li', {}, b);
      }),
    );
  }

  // ---- one knowledge base: documents and search ----
  const detailTitle = h('h2', { id: 'kb-detail-title' });
  const docsEl = h('div');
  const docsMsg = messages();
  const title = h('input', { type: 'text', name: 'title', required: true, maxlength: '500' });
  const content = h('textarea', { name: 'content', rows: 6, required: true });
  const addButton = h('button', { type: 'submit', class: 'primary' }, 'Add document');
  const addMsg = messages();
  const addForm = h(
    'form',
    { method: 'post', 'aria-labelledby': 'add-doc' },
    h('h3', { id: 'add-doc' }, 'Add a document'),
    field('Title', title),
    field('Content', content),
    h('div', { class: 'actions' }, addButton),
    addMsg.el,
  );
  const query = h('input', { type: 'search', name: 'q', maxlength: '500' });
  const searchButton = h('button', { type: 'submit', class: 'secondary' }, 'Search');
  const results = h('div', { 'aria-live': 'polite' });
  const searchMsg = messages();
  const searchForm = h(
    'form',
    { method: 'post', role: 'search', 'aria-labelledby': 'kb-search' },
    h('h3', { id: 'kb-search' }, 'Try a search'),
    h('div', { class: 'row' }, field('Search', query), searchButton),
    searchMsg.el,
    results,
  );
  replace(
    detail,
    detailTitle,
    h('div', { class: 'grid-2 top' }, h('div', {}, addForm, searchForm), h('div', {}, h('h3', {}, 'Documents'), docsMsg.el, docsEl)),
  );

  addForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = state.selectedId;
    if (!title.value.trim() || !content.value.trim()) {
      addMsg.error(new Error('A document needs a title and some content.'));
      (title.value.trim() ? content : title).focus();
      return;
    }
    try {
      const { document: doc } = await busy(addButton, () => api('POST', `/api/knowledge-bases/${seg(id)}/documents`, { title: title.value.trim(), content: content.value }, { signal }));
      if (state.selectedId !== id) return;
      title.value = '';
      content.value = '';
      state.documents.push(doc);
      renderDocs();
      addMsg.ok(`Document “${doc.title}” added.`);
    } catch (err) {
      if (err.name !== 'AbortError') addMsg.error(err);
    }
  });

  searchForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const q = query.value.trim();
    if (!q) {
      replace(results);
      return;
    }
    try {
      const out = await busy(searchButton, () => api('GET', `/api/knowledge-bases/${seg(state.selectedId)}/search?q=${encodeURIComponent(q)}`, undefined, { signal }));
      searchMsg.clear();
      const list = out.results ?? [];
      replace(
        results,
        list.length
          ? h(
              'ol',
              { class: 'results', 'aria-label': 'Search results' },
              list.map((r) =>
                h('li', {}, h('strong', {}, r.title), typeof r.score === 'number' ? h('span', { class: 'muted small' }, ` score ${r.score.toFixed(3)}`) : null, h('p', {}, snippetNodes(r.snippet, q))),
              ),
            )
          : h('p', { class: 'muted' }, `No results for “${q}”.`),
      );
    } catch (err) {
      if (err.name !== 'AbortError') searchMsg.error(err);
    }
  });

  function renderDocs() {
    if (!state.documents.length) {
      replace(docsEl, h('p', { class: 'muted empty' }, 'No documents yet.'));
      return;
    }
    replace(
      docsEl,
      h(
        'ul',
        { class: 'docs' },
        state.documents.map((d) => {
          const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${d.title}` }, 'Delete');
          del.addEventListener('click', async () => {
            try {
              await busy(del, () => api('DELETE', `/api/knowledge-bases/${seg(state.selectedId)}/documents/${seg(d.id)}`, undefined, { signal }));
              state.documents = state.documents.filter((x) => x.id !== d.id);
              renderDocs();
              docsMsg.ok(`Document “${d.title}” deleted.`);
            } catch (err) {
              if (err.name !== 'AbortError') docsMsg.error(err);
            }
          });
          const text = String(d.content ?? '');
          return h(
            'li',
            { class: 'doc' },
            h('div', { class: 'doc-head' }, h('strong', {}, d.title), time(d.createdAt), del),
            h('p', { class: 'doc-body' }, text.length > 240 ? `${text.slice(0, 240)}…` : text),
          );
        }),
      ),
    );
  }

  async function choose(id) {
    state.selectedId = id;
    state.documents = [];
    const kb = state.knowledgeBases.find((k) => k.id === id);
    renderKbList();
    detail.hidden = false;
    detailTitle.textContent = kb ? kb.name : `Knowledge base #${id}`;
    replace(results);
    addMsg.clear();
    searchMsg.clear();
    docsMsg.ok('Loading documents…');
    replace(docsEl);
    try {
      const out = await api('GET', `/api/knowledge-bases/${seg(id)}/documents`, undefined, { signal });
      if (state.selectedId !== id) return;
      state.documents = out.documents ?? [];
      docsMsg.clear();
      renderDocs();
    } catch (err) {
      if (err.name !== 'AbortError') docsMsg.error(err);
    }
  }

  async function load() {
    try {
      const out = await api('GET', '/api/knowledge-bases', undefined, { signal });
      state.knowledgeBases = out.knowledgeBases ?? [];
      renderKbList();
      if (state.knowledgeBases.length && state.selectedId === null) choose(state.knowledgeBases[0].id);
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Knowledge'),
    h('p', { class: 'lead muted' }, 'Documents your agents answer from. Built-in agents search them directly.'),
    createForm,
    h('section', { 'aria-labelledby': 'kbs-title' }, h('h2', { id: 'kbs-title' }, 'Knowledge bases'), listMsg.el, kbList),
    detail,
  );
  renderKbList();
  load();
}

// Knowledge bases: create one (language), pick one; add documents (drag and drop or choose
// a file, a page by URL, or typed text); watch their processing (status, progress bars);
// retry a failed one; preview a document's chunks; edit the base's own synonyms; try a search;
// change the base's settings (name, language, embedding model with its write-only key).
// #/knowledge/<id> opens a base; #/knowledge/<id>/gaps its knowledge gaps (knowledge-gaps.js);
// #/knowledge/<id>/write/<question> its add-document form with the question filled in.
import { api, apiAll, apiUpload, seg } from '../api.js';
import { busy, checkbox, field, fieldErrors, h, messages, replace, secretInput, select, table, time } from '../dom.js';

const SYNONYMS_PER_GROUP = 20;
const SYNONYM_LENGTH = 60;

// `auto` first: each document stemmed in the language it is written in (the API's default).
const LANGUAGES = [
  { value: 'auto', label: 'Detect per document (recommended)' },
  ...['english', 'russian', 'german', 'french', 'spanish', 'italian', 'portuguese', 'dutch', 'turkish'].map((l) => ({ value: l, label: l })),
  { value: 'simple', label: 'simple (no stemming)' },
];
const languageText = (language) => (language === 'auto' ? 'detected per document' : language);
const FORMATS = [
  { value: 'markdown', label: 'Markdown / plain text with # headings' },
  { value: 'text', label: 'Plain text' },
  { value: 'html', label: 'HTML' },
];
const ACCEPT = '.txt,.md,.markdown,.html,.htm,.pdf';
const POLL_MS = 1000;

/** The snippet as text, with the query's words marked (<mark>), all built from text nodes. */
function snippetNodes(snippet, query) {
  const text = String(snippet ?? '');
  const words = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 2))];
  if (!words.length) return [text];
  const re = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`, 'giu');
  return text.split(re).filter(Boolean).map((part) => (words.includes(part.toLowerCase()) ? h('mark', {}, part) : part));
}

const sourceText = (s) => (s?.type === 'url' ? s.url : s?.filename ? `${s.filename}` : s?.type ?? '');

export function render(root, ctx) {
  const [id, view, question] = ctx.params;
  if (id && view === 'gaps') return import('./knowledge-gaps.js').then((gaps) => gaps.render(root, ctx, id));
  return renderBases(root, ctx, { id: Number(id) || null, question: view === 'write' && question ? question : null });
}

/** The knowledge bases; `wanted`: the base to open first, and a question to write an article for. */
function renderBases(root, { signal }, wanted) {
  const state = { knowledgeBases: [], selectedId: null, documents: [], total: 0, preview: null, timer: null };
  const listMsg = messages();
  const kbList = h('ul', { class: 'pill-list' });
  const detail = h('section', { class: 'panel', 'aria-labelledby': 'kb-detail-title', hidden: true });

  // ---- create a knowledge base ----
  const kbName = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const kbLanguage = select(LANGUAGES, { name: 'language' });
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create knowledge base');
  const createMsg = messages();
  const createForm = h(
    'form',
    { method: 'post', class: 'panel inline-form', 'aria-labelledby': 'new-kb' },
    h('h2', { id: 'new-kb' }, 'New knowledge base'),
    h('div', { class: 'row' }, field('Name', kbName), field('Language', kbLanguage, 'How words are stemmed for search: each document in its own language, or one for all.'), createButton),
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
      const { knowledgeBase } = await busy(createButton, () => api('POST', '/api/knowledge-bases', { name: kbName.value.trim(), language: kbLanguage.value }, { signal }));
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

  // ---- one knowledge base ----
  const detailTitle = h('h2', { id: 'kb-detail-title' });
  const detailFacts = h('p', { class: 'muted small' });
  const gapsLink = h('a', { href: '#/knowledge' }, 'Knowledge gaps');
  const gapsNote = h('p', {}, gapsLink, h('span', { class: 'muted small' }, ': the questions customers asked that this base could not answer.'));
  const docsEl = h('div');
  const docsMsg = messages();
  const previewEl = h('div', { 'aria-live': 'polite' });

  // Upload: drag and drop, or choose a file.
  const fileInput = h('input', { type: 'file', name: 'file', accept: ACCEPT });
  const uploadMsg = messages();
  const dropzone = h(
    'div',
    { class: 'dropzone', 'aria-labelledby': 'upload-title' },
    h('h3', { id: 'upload-title' }, 'Upload a file'),
    h('p', { class: 'muted small' }, 'Drop a .txt, .md, .html or .pdf file here (up to 10 MiB), or choose one.'),
    field('File', fileInput),
    uploadMsg.el,
  );
  for (const type of ['dragenter', 'dragover']) {
    dropzone.addEventListener(type, (e) => {
      e.preventDefault();
      dropzone.classList.add('over');
    });
  }
  dropzone.addEventListener('dragleave', () => dropzone.classList.remove('over'));
  dropzone.addEventListener('drop', (e) => {
    e.preventDefault();
    dropzone.classList.remove('over');
    const files = [...(e.dataTransfer?.files ?? [])];
    for (const f of files) uploadFile(f);
  });
  fileInput.addEventListener('change', () => {
    for (const f of [...(fileInput.files ?? [])]) uploadFile(f);
    fileInput.value = '';
  });

  async function uploadFile(file) {
    const id = state.selectedId;
    const form = new FormData();
    form.append('file', file, file.name);
    uploadMsg.ok(`Uploading “${file.name}”…`);
    try {
      const { document: doc } = await apiUpload(`/api/knowledge-bases/${seg(id)}/documents`, form, { signal });
      if (state.selectedId !== id) return;
      uploadMsg.ok(`“${file.name}” uploaded.`);
      state.documents.push(doc);
      state.total += 1;
      renderDocs();
      watch();
    } catch (err) {
      if (err.name !== 'AbortError') uploadMsg.error(err);
    }
  }

  // A page by URL.
  const pageUrl = h('input', { type: 'url', name: 'url', placeholder: 'https://help.example.com/article', spellcheck: 'false' });
  const pageButton = h('button', { type: 'submit', class: 'secondary' }, 'Add page');
  const pageMsg = messages();
  const pageForm = h('form', { method: 'post', 'aria-labelledby': 'add-page' }, h('h3', { id: 'add-page' }, 'Add a web page'), h('div', { class: 'row' }, field('Page URL', pageUrl), pageButton), pageMsg.el);
  pageForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const url = pageUrl.value.trim();
    if (!url) {
      pageMsg.error(new Error('Type the address of the page.'));
      pageUrl.focus();
      return;
    }
    await addDocument(pageButton, pageMsg, { url }, () => (pageUrl.value = ''));
  });

  // Typed text.
  const title = h('input', { type: 'text', name: 'title', required: true, maxlength: '500' });
  const content = h('textarea', { name: 'content', rows: 6, required: true });
  const format = select(FORMATS, { name: 'format' });
  const addButton = h('button', { type: 'submit', class: 'primary' }, 'Add document');
  const addMsg = messages();
  const addForm = h(
    'form',
    { method: 'post', 'aria-labelledby': 'add-doc' },
    h('h3', { id: 'add-doc' }, 'Add a document'),
    field('Title', title),
    field('Content', content),
    field('Format', format),
    h('div', { class: 'actions' }, addButton),
    addMsg.el,
  );
  addForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!title.value.trim() || !content.value.trim()) {
      addMsg.error(new Error('A document needs a title and some content.'));
      (title.value.trim() ? content : title).focus();
      return;
    }
    await addDocument(addButton, addMsg, { title: title.value.trim(), content: content.value, format: format.value }, () => {
      title.value = '';
      content.value = '';
    });
  });

  async function addDocument(button, msg, body, clear) {
    const id = state.selectedId;
    try {
      const { document: doc } = await busy(button, () => api('POST', `/api/knowledge-bases/${seg(id)}/documents`, body, { signal }));
      if (state.selectedId !== id) return;
      clear();
      state.documents.push(doc);
      state.total += 1;
      renderDocs();
      msg.ok(`Document “${doc.title}” added.`);
      watch();
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  // The base's own synonyms: one group per line, its words or phrases separated by commas
  // (limits of the API, lib/knowledge/search.ts; the number of groups is the company's quota).
  const synonyms = h('textarea', { name: 'synonyms', rows: 4, placeholder: 'esim, embedded sim, digital sim\nsim card, simcard, sim' });
  const synonymsButton = h('button', { type: 'submit', class: 'secondary' }, 'Save synonyms');
  const synonymsMsg = messages();
  const synonymsForm = h(
    'form',
    { method: 'post', 'aria-labelledby': 'kb-synonyms' },
    h('h3', { id: 'kb-synonyms' }, 'Synonyms'),
    field('Words your customers use for the same thing', synonyms, `One group per line, separated by commas: up to ${SYNONYMS_PER_GROUP} words or phrases of up to ${SYNONYM_LENGTH} characters each, at most 2000 groups. Common English and Russian ones are built in.`),
    h('div', { class: 'actions' }, synonymsButton),
    synonymsMsg.el,
  );
  const synonymsText = (groups) => (groups ?? []).map((g) => g.join(', ')).join('\n');
  synonymsForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = state.selectedId;
    const groups = synonyms.value.split('\n').map((line) => line.split(',').map((w) => w.trim()).filter(Boolean)).filter((g) => g.length);
    const lonely = groups.find((g) => g.length < 2);
    const crowded = groups.find((g) => g.length > SYNONYMS_PER_GROUP);
    const long = groups.flat().find((w) => w.length > SYNONYM_LENGTH);
    const problem = lonely
      ? `“${lonely[0]}” needs at least one other word on its line.`
      : crowded
        ? `The line starting “${crowded[0]}” has ${crowded.length} entries; at most ${SYNONYMS_PER_GROUP}.`
        : long
          ? `“${long.slice(0, 30)}…” is longer than ${SYNONYM_LENGTH} characters.`
          : null;
    if (problem) {
      synonymsMsg.error(new Error(problem));
      synonyms.focus();
      return;
    }
    try {
      const { knowledgeBase } = await busy(synonymsButton, () => api('PATCH', `/api/knowledge-bases/${seg(id)}`, { synonyms: groups }, { signal }));
      state.knowledgeBases = state.knowledgeBases.map((k) => (k.id === knowledgeBase.id ? knowledgeBase : k));
      if (state.selectedId !== id) return;
      synonyms.value = synonymsText(knowledgeBase.synonyms);
      synonymsMsg.ok(`${knowledgeBase.synonyms.length} synonym group${knowledgeBase.synonyms.length === 1 ? '' : 's'} saved; searches use them now.`);
    } catch (err) {
      if (err.name !== 'AbortError') synonymsMsg.error(err);
    }
  });

  // The base's settings: a new language or embedding model indexes its documents again.
  const baseName = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const baseLanguage = h('select', { name: 'language' });
  const useEmbedding = checkbox('Use your own embedding model (instead of the built-in English one)', { name: 'useEmbedding' });
  const embeddingUrl = h('input', { type: 'url', name: 'embeddingBaseUrl', placeholder: 'https://api.openai.com/v1', spellcheck: 'false', maxlength: '2000' });
  const embeddingModel = h('input', { type: 'text', name: 'embeddingName', placeholder: 'text-embedding-3-small', spellcheck: 'false', maxlength: '200' });
  const embeddingKey = secretInput('embeddingApiKey', 'Remove the stored embedding key');
  const embeddingKeyHint = h('span');
  const embeddingFields = h(
    'div',
    {},
    h('div', { class: 'grid-2' }, field('Embedding server URL', embeddingUrl, 'An OpenAI-compatible embeddings endpoint.'), field('Embedding model name', embeddingModel)),
    field('Embedding API key', embeddingKey.input, embeddingKeyHint),
    embeddingKey.forget,
  );
  useEmbedding.input.addEventListener('change', () => {
    embeddingFields.hidden = !useEmbedding.input.checked;
  });
  const settingsButton = h('button', { type: 'submit', class: 'secondary' }, 'Save settings');
  const settingsMsg = messages();
  const settingsErrors = fieldErrors();
  const settingsForm = h(
    'form',
    { method: 'post', 'aria-labelledby': 'kb-settings', novalidate: true },
    h('h3', { id: 'kb-settings' }, 'Settings of this base'),
    h('div', { class: 'grid-2' }, field('Base name', baseName), field('Search language', baseLanguage, 'How words are stemmed for search. Changing it indexes the documents again.')),
    useEmbedding.el,
    embeddingFields,
    h('div', { class: 'actions' }, settingsButton),
    settingsMsg.el,
  );
  function fillSettings(kb) {
    baseName.value = kb?.name ?? '';
    const languages = kb && !LANGUAGES.some((l) => l.value === kb.language) ? [...LANGUAGES, { value: kb.language, label: kb.language }] : LANGUAGES;
    replace(baseLanguage, languages.map((l) => h('option', { value: l.value }, l.label)));
    baseLanguage.value = kb?.language ?? 'auto';
    useEmbedding.input.checked = Boolean(kb?.embedding);
    embeddingFields.hidden = !kb?.embedding;
    embeddingUrl.value = kb?.embedding?.baseUrl ?? '';
    embeddingModel.value = kb?.embedding?.name ?? '';
    embeddingKey.show(kb?.embedding?.hasApiKey);
    embeddingKeyHint.textContent = kb?.embedding?.hasApiKey ? 'A key is stored (hidden). Leave empty to keep it; a new server URL needs it again.' : 'Write-only: stored encrypted and never shown again.';
    settingsErrors.clear();
  }
  settingsForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    settingsErrors.clear();
    const id = state.selectedId;
    const kb = state.knowledgeBases.find((k) => k.id === id);
    const body = {};
    if (baseName.value.trim() !== kb?.name) body.name = baseName.value.trim();
    if (baseLanguage.value !== kb?.language) body.language = baseLanguage.value;
    if (!useEmbedding.input.checked) {
      if (kb?.embedding) body.embedding = null;
    } else {
      const embedding = { baseUrl: embeddingUrl.value.trim(), name: embeddingModel.value.trim() };
      const key = embeddingKey.change();
      if (key !== undefined) embedding.apiKey = key;
      if (embedding.apiKey !== undefined || embedding.baseUrl !== kb?.embedding?.baseUrl || embedding.name !== kb?.embedding?.name) body.embedding = embedding;
    }
    if (!Object.keys(body).length) {
      settingsMsg.ok('Nothing changed.');
      return;
    }
    try {
      const { knowledgeBase } = await busy(settingsButton, () => api('PATCH', `/api/knowledge-bases/${seg(id)}`, body, { signal }));
      state.knowledgeBases = state.knowledgeBases.map((k) => (k.id === knowledgeBase.id ? knowledgeBase : k));
      if (state.selectedId !== id) return;
      renderKbList();
      showFacts(knowledgeBase);
      fillSettings(knowledgeBase);
      settingsMsg.ok(body.language !== undefined || body.embedding !== undefined ? 'Settings saved: the documents are indexed again in the background.' : 'Settings saved.');
    } catch (err) {
      embeddingKey.input.value = '';
      if (err.name === 'AbortError') return;
      settingsErrors.report(settingsMsg, err, { name: baseName, language: baseLanguage, embedding: useEmbedding.input, 'embedding.baseUrl': embeddingUrl, 'embedding.name': embeddingModel, 'embedding.apiKey': embeddingKey.input });
    }
  });

  // Search.
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
                h(
                  'li',
                  {},
                  h('strong', {}, r.title),
                  r.heading ? h('span', { class: 'muted small' }, ` › ${r.heading}`) : null,
                  (r.matchedBy ?? []).map((m) => h('span', { class: 'tag' }, m)),
                  h('p', {}, snippetNodes(r.snippet, q)),
                ),
              ),
            )
          : h('p', { class: 'muted' }, `No results for “${q}”.`),
      );
    } catch (err) {
      if (err.name !== 'AbortError') searchMsg.error(err);
    }
  });

  replace(
    detail,
    detailTitle,
    detailFacts,
    gapsNote,
    h('div', { class: 'grid-2 top' }, h('div', {}, dropzone, pageForm, addForm, searchForm, synonymsForm, settingsForm), h('div', {}, h('h3', {}, 'Documents'), docsMsg.el, docsEl, previewEl)),
  );

  function statusCell(d) {
    const badge = h('span', { class: ['badge', `status-${d.status}`] }, d.status === 'processing' ? 'Processing' : d.status === 'ready' ? 'Ready' : 'Failed');
    if (d.status === 'processing') return h('div', {}, badge, ' ', h('progress', { max: '100', value: String(d.progress ?? 0), 'aria-label': `Progress of ${d.title}` }), h('span', { class: 'muted small' }, ` ${d.progress ?? 0}%`));
    if (d.status === 'failed') return h('div', {}, badge, h('p', { class: 'doc-error' }, d.error ?? ''));
    return badge;
  }

  function renderDocs() {
    replace(
      docsEl,
      table(
        '!Documents',
        [
          { label: 'Title', cell: (d) => h('div', {}, h('strong', {}, d.title), h('div', { class: 'muted small' }, sourceText(d.source))) },
          { label: 'Status', cell: statusCell },
          { label: 'Chunks', class: 'num', cell: (d) => String(d.chunks ?? 0) },
          {
            label: 'Actions',
            cell: (d) => {
              const view = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Chunks of ${d.title}`, disabled: d.status !== 'ready' }, 'Chunks');
              view.addEventListener('click', () => showChunks(d, view));
              let again = null;
              if (d.status === 'failed') {
                again = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Retry ${d.title}` }, 'Retry');
                again.addEventListener('click', () => retry(d, again));
              }
              const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${d.title}` }, 'Delete');
              del.addEventListener('click', () => remove(d, del));
              return h('div', { class: 'actions tight' }, again, view, del);
            },
          },
        ],
        state.documents,
        { empty: 'No documents yet.', rowProps: (d) => ({ dataset: { documentId: String(d.id) } }) },
      ),
      state.total > state.documents.length ? h('p', { class: 'muted small' }, `Showing ${state.documents.length} of ${state.total}.`) : null,
    );
  }

  async function remove(d, button) {
    try {
      await busy(button, () => api('DELETE', `/api/knowledge-bases/${seg(state.selectedId)}/documents/${seg(d.id)}`, undefined, { signal }));
      state.documents = state.documents.filter((x) => x.id !== d.id);
      state.total -= 1;
      if (state.preview === d.id) replace(previewEl);
      renderDocs();
      docsMsg.ok(`Document “${d.title}” deleted.`);
    } catch (err) {
      if (err.name !== 'AbortError') docsMsg.error(err);
    }
  }

  /** A failed document processed again: it shows `processing` at once, then the list's polling follows it. */
  async function retry(d, button) {
    const id = state.selectedId;
    try {
      const { document: doc } = await busy(button, () => api('POST', `/api/knowledge-bases/${seg(id)}/documents/${seg(d.id)}/retry`, undefined, { signal }));
      if (state.selectedId !== id) return;
      state.documents = state.documents.map((x) => (x.id === doc.id ? doc : x));
      renderDocs();
      docsMsg.ok(`Processing “${doc.title}” again.`);
      watch();
    } catch (err) {
      if (err.name !== 'AbortError') docsMsg.error(err);
    }
  }

  async function showChunks(d, button) {
    try {
      const out = await busy(button, () => api('GET', `/api/knowledge-bases/${seg(state.selectedId)}/documents/${seg(d.id)}/chunks?limit=50`, undefined, { signal }));
      state.preview = d.id;
      replace(
        previewEl,
        h(
          'section',
          { 'aria-labelledby': 'chunks-title' },
          h('h3', { id: 'chunks-title' }, `Chunks of “${d.title}”`),
          h('p', { class: 'muted small' }, out.total > out.chunks.length ? `First ${out.chunks.length} of ${out.total}.` : `${out.total} chunk${out.total === 1 ? '' : 's'}.`),
          h(
            'ol',
            { class: 'chunk-list', 'aria-label': `Chunks of ${d.title}` },
            out.chunks.map((c) => h('li', {}, c.heading ? h('div', { class: 'chunk-heading' }, c.heading) : null, h('p', {}, c.content))),
          ),
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError') docsMsg.error(err);
    }
  }

  /** While a document is processing, the list is refreshed every second. */
  function watch() {
    if (state.timer || !state.documents.some((d) => d.status === 'processing')) return;
    state.timer = setTimeout(async () => {
      state.timer = null;
      await loadDocuments(state.selectedId);
      watch();
    }, POLL_MS);
  }

  async function loadDocuments(id) {
    try {
      const out = await api('GET', `/api/knowledge-bases/${seg(id)}/documents?limit=200`, undefined, { signal });
      if (state.selectedId !== id) return;
      state.documents = out.documents ?? [];
      state.total = out.total ?? state.documents.length;
      docsMsg.clear();
      renderDocs();
    } catch (err) {
      if (err.name !== 'AbortError') docsMsg.error(err);
    }
  }

  function showFacts(kb, id = kb?.id) {
    detailTitle.textContent = kb ? kb.name : `Knowledge base #${id}`;
    detailFacts.textContent = kb ? `Language: ${languageText(kb.language)}${kb.embedding ? ` · embeddings: ${kb.embedding.name}` : ''}` : '';
  }

  async function choose(id) {
    state.selectedId = id;
    state.documents = [];
    state.preview = null;
    const kb = state.knowledgeBases.find((k) => k.id === id);
    renderKbList();
    detail.hidden = false;
    showFacts(kb, id);
    fillSettings(kb);
    gapsLink.href = `#/knowledge/${seg(id)}/gaps`;
    replace(results);
    replace(previewEl);
    synonyms.value = synonymsText(kb?.synonyms);
    for (const m of [addMsg, searchMsg, uploadMsg, pageMsg, synonymsMsg, settingsMsg]) m.clear();
    docsMsg.ok('Loading documents…');
    replace(docsEl);
    await loadDocuments(id);
    watch();
  }

  /** "Write an article" of a knowledge gap: the add-document form with the question as its title and first heading. */
  function writeArticle(kb, question) {
    // Done once: reloading the page must not fill the form again.
    history.replaceState(null, '', `#/knowledge/${seg(kb.id)}`);
    title.value = question.slice(0, 500);
    content.value = `# ${question}\n\n`;
    format.value = 'markdown';
    addMsg.ok('Write the answer under the question, then add the document: the agent answers from it next time.');
    addForm.scrollIntoView({ block: 'center' });
    content.focus();
    content.setSelectionRange(content.value.length, content.value.length);
  }

  async function load() {
    try {
      const out = await apiAll('/api/knowledge-bases', 'knowledgeBases', { signal });
      state.knowledgeBases = out.knowledgeBases ?? [];
      renderKbList();
      if (!state.knowledgeBases.length || state.selectedId !== null) return;
      const asked = state.knowledgeBases.find((k) => k.id === wanted.id);
      const chosen = choose((asked ?? state.knowledgeBases[0]).id);
      if (asked && wanted.question) writeArticle(asked, wanted.question);
      await chosen;
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Knowledge'),
    h('p', { class: 'lead muted' }, 'Documents your agents answer from: files, web pages or text, split into chunks and searched by meaning and words.'),
    createForm,
    h('section', { 'aria-labelledby': 'kbs-title' }, h('h2', { id: 'kbs-title' }, 'Knowledge bases'), listMsg.el, kbList),
    detail,
  );
  renderKbList();
  load();
  return () => {
    if (state.timer) clearTimeout(state.timer);
  };
}

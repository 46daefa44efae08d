// Get started (contract.md § The first hour): the four steps from sign-up to an agent that
// answers, in the order they depend on each other: a help centre (the sample one in one click,
// a document, a page URL), the agent answering from it, a channel (the website chat's snippet,
// or a helpdesk on the Integrations page), and a "Try it" chat with the agent right here. Each
// step says whether it is done, from what the API holds, so the page is right after a reload,
// in another tab, or once a colleague did a step elsewhere.
import { api, apiAll, apiUpload, seg } from '../api.js';
import { busy, copyField, field, h, messages, replace } from '../dom.js';
import { sampleArticles, SAMPLE_HELP_CENTRE_NAME } from '../sample-help-centre.js';
import { tryChat } from '../try-chat.js';

const POLL_MS = 1000;
const ACCEPT = '.txt,.md,.markdown,.html,.htm,.pdf';
// The conversations looked at for a first answer: a company still getting started has few.
const RECENT_CONVERSATIONS = 50;

/** A webchat integration this page may open: active, and either open to any page or to the dashboard's own. */
const CHANNEL_NAMES = { webchat: 'website chat', helpdesk: 'helpdesk', whatsapp: 'WhatsApp', telegram: 'Telegram' };
const triable = (it) => it.type === 'webchat' && it.active !== false && (!it.allowedOrigins?.length || it.allowedOrigins.includes(location.origin));

/**
 * What the company has done of the first hour, from the API: `helpCentre` (a base with a read
 * document), `agent`, `channel` (an integration), `tried` (the agent answered a conversation).
 */
export async function firstHour(signal) {
  const [{ knowledgeBases }, { agents }, { integrations }, { conversations }] = await Promise.all([
    apiAll('/api/knowledge-bases', 'knowledgeBases', { signal }),
    apiAll('/api/agents', 'agents', { signal }),
    apiAll('/api/integrations', 'integrations', { signal }),
    api('GET', `/api/conversations?limit=${RECENT_CONVERSATIONS}`, undefined, { signal }),
  ]);
  // A base with chunks may still be reading its documents (chunks are written before a document is ready).
  let answering = null;
  for (const k of knowledgeBases.filter((k) => k.chunks > 0)) {
    const { documents } = await api('GET', `/api/knowledge-bases/${seg(k.id)}/documents?limit=200`, undefined, { signal });
    if (documents.some((d) => d.status === 'ready')) {
      answering = k;
      break;
    }
  }
  const done = {
    helpCentre: answering !== null,
    agent: agents.length > 0,
    channel: integrations.length > 0,
    tried: conversations.some((c) => c.lastMessage?.role === 'agent'),
  };
  return { knowledgeBases, answering, agents, integrations, done, finished: Object.values(done).every(Boolean) };
}

/** One step: a region named by its heading, with a "Done" / "Not done yet" badge. */
function step(n, title) {
  const headingId = `step-${n}`;
  const badge = h('span', { class: 'badge step-badge' });
  const body = h('div', { class: 'step-body' });
  const el = h('section', { class: 'step', 'aria-labelledby': headingId }, h('header', { class: 'step-head' }, h('h2', { id: headingId }, `${n}. ${title}`), badge), body);
  return {
    el,
    body,
    setDone(done) {
      el.classList.toggle('done', done);
      badge.classList.toggle('ok', done);
      badge.classList.toggle('pending', !done);
      badge.textContent = done ? 'Done' : 'Not done yet';
    },
  };
}

export async function render(root, { signal, me }) {
  const state = { data: null, reading: null, chat: null, chatFor: null, answered: false };
  const summary = h('p', { class: 'lead', role: 'status' });
  const pageMsg = messages();
  const steps = { helpCentre: step(1, 'Help centre'), agent: step(2, 'Agent'), channel: step(3, 'Channel'), tried: step(4, 'Try it') };

  // ---- 1. help centre ----
  const sampleButton = h('button', { type: 'button', class: 'primary' }, 'Use the sample help centre');
  const kbMsg = messages();
  const kbNow = h('p', {});
  const fileInput = h('input', { type: 'file', name: 'file', accept: ACCEPT });
  const pageUrl = h('input', { type: 'url', name: 'url', placeholder: 'https://help.example.com/returns', spellcheck: 'false' });
  const pageButton = h('button', { type: 'submit', class: 'secondary' }, 'Add page');
  const pageForm = h('form', { method: 'post', class: 'row', 'aria-label': 'Add a page of your help centre' }, field('Page URL', pageUrl), pageButton);
  replace(
    steps.helpCentre.body,
    h('p', { class: 'muted' }, 'What your agent answers from. Start with the sample articles of a kitchen shop (returns, delivery, payments, warranty, contact) to see it work, or add your own.'),
    kbNow,
    h('div', { class: 'step-choices' }, sampleButton, field('Upload a document', fileInput, '.txt, .md, .html or .pdf, up to 10 MiB.'), pageForm),
    h('p', { class: 'small' }, h('a', { href: '#/knowledge' }, 'The Knowledge page'), ' has more: typed text, synonyms, a search to try.'),
    kbMsg.el,
  );

  /** The base new documents go to: the one already answering, else the first, else a new one. */
  async function targetBase() {
    const bases = state.data?.knowledgeBases ?? [];
    const base = bases.find((k) => k.chunks > 0) ?? bases[0];
    if (base) return base;
    return (await api('POST', '/api/knowledge-bases', { name: 'Help centre' }, { signal })).knowledgeBase;
  }

  sampleButton.addEventListener('click', () =>
    busy(sampleButton, async () => {
      try {
        kbMsg.ok('Adding the sample articles…');
        const articles = await sampleArticles(signal);
        const { knowledgeBase } = await api('POST', '/api/knowledge-bases', { name: SAMPLE_HELP_CENTRE_NAME, language: 'english' }, { signal });
        for (const a of articles) await api('POST', `/api/knowledge-bases/${seg(knowledgeBase.id)}/documents`, { title: a.title, content: a.content, format: 'markdown' }, { signal });
        read(knowledgeBase);
      } catch (err) {
        if (err.name !== 'AbortError') kbMsg.error(err);
      }
      await refresh();
    }),
  );

  fileInput.addEventListener('change', async () => {
    const file = fileInput.files?.[0];
    if (!file) return;
    const form = new FormData();
    form.append('file', file, file.name);
    kbMsg.ok(`Uploading “${file.name}”…`);
    try {
      const base = await targetBase();
      await apiUpload(`/api/knowledge-bases/${seg(base.id)}/documents`, form, { signal });
      fileInput.value = '';
      read(base);
    } catch (err) {
      if (err.name !== 'AbortError') kbMsg.error(err);
    }
    await refresh();
  });

  pageForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const url = pageUrl.value.trim();
    if (!url) {
      kbMsg.error(new Error('Type the address of a page of your help centre.'));
      pageUrl.focus();
      return;
    }
    try {
      const base = await busy(pageButton, () => targetBase());
      await busy(pageButton, () => api('POST', `/api/knowledge-bases/${seg(base.id)}/documents`, { url }, { signal }));
      pageUrl.value = '';
      read(base);
    } catch (err) {
      if (err.name !== 'AbortError') kbMsg.error(err);
    }
    await refresh();
  });

  /** Documents are read in the background: says how far, until none is left to read. */
  function read(base) {
    clearTimeout(state.reading);
    const poll = async () => {
      try {
        const { documents } = await apiAll(`/api/knowledge-bases/${seg(base.id)}/documents`, 'documents', { signal });
        const ready = documents.filter((d) => d.status === 'ready').length;
        const failed = documents.filter((d) => d.status === 'failed');
        const waiting = documents.length - ready - failed.length;
        if (documents.length === 0) return;
        if (waiting > 0) {
          kbMsg.ok(`Reading the documents of “${base.name}”: ${ready} of ${documents.length} ready…`);
          state.reading = setTimeout(poll, POLL_MS);
          return;
        }
        // The step's badge first, then the line that says so: never "ready" beside "Not done yet".
        await refresh();
        if (failed.length) kbMsg.error(new Error(`${failed.length} document${failed.length === 1 ? '' : 's'} could not be read (${failed[0].title}: ${failed[0].error ?? 'failed'}). See the Knowledge page.`));
        else kbMsg.ok(`“${base.name}”: ${ready} document${ready === 1 ? '' : 's'} ready.`);
      } catch (err) {
        if (err.name !== 'AbortError') kbMsg.error(err);
      }
    };
    state.reading = setTimeout(poll, 0);
  }

  // ---- 2. agent ----
  const agentName = h('input', { type: 'text', name: 'agentName', maxlength: '200', value: `${me?.company?.companyName ?? 'Our'} assistant`.slice(0, 200) });
  const agentButton = h('button', { type: 'submit', class: 'primary' }, 'Create the agent');
  const agentMsg = messages();
  const agentNow = h('p', {});
  const agentForm = h('form', { method: 'post', class: 'row', 'aria-label': 'Create the agent' }, field('Agent name', agentName), agentButton);
  replace(
    steps.agent.body,
    h('p', { class: 'muted' }, 'The built-in agent answers with the passage of your help centre that fits, and hands the conversation to a person when none does: no model to set up, no cost. A language model, a greeting, opening hours and actions are on the ', h('a', { href: '#/agents' }, 'Agents page'), '.'),
    agentNow,
    agentForm,
    agentMsg.el,
  );
  agentForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const base = (state.data?.knowledgeBases ?? []).find((k) => k.chunks > 0) ?? state.data?.knowledgeBases[0];
    if (!base) {
      agentMsg.error(new Error('Add a help centre first (step 1): the agent answers from it.'));
      return;
    }
    try {
      const { agent } = await busy(agentButton, () => api('POST', '/api/agents', { name: agentName.value.trim() || 'Assistant', model: { provider: 'builtin' }, knowledgeBaseId: base.id }, { signal }));
      agentMsg.ok(`Agent “${agent.name}” created: it answers from “${base.name}”.`);
    } catch (err) {
      if (err.name !== 'AbortError') agentMsg.error(err);
    }
    await refresh();
  });

  // ---- 3. channel ----
  const webchatButton = h('button', { type: 'button', class: 'primary' }, 'Create the website chat');
  const channelMsg = messages();
  const channelNow = h('div', {});
  replace(
    steps.channel.body,
    h('p', { class: 'muted' }, 'Where customers reach the agent: a chat on your website (one line to paste into its pages), or your helpdesk (Chat2Desk), connected on the ', h('a', { href: '#/integrations' }, 'Integrations page'), '.'),
    channelNow,
    h('div', { class: 'step-choices' }, webchatButton),
    channelMsg.el,
  );
  webchatButton.addEventListener('click', () =>
    busy(webchatButton, async () => {
      const agent = state.data?.agents[0];
      if (!agent) {
        channelMsg.error(new Error('Create the agent first (step 2): it answers the chat.'));
        return;
      }
      try {
        await api('POST', '/api/integrations', { type: 'webchat', name: 'Website chat', agentId: agent.id }, { signal });
        channelMsg.ok('Website chat created. Paste the snippet into your pages, or try it below first.');
      } catch (err) {
        if (err.name !== 'AbortError') channelMsg.error(err);
      }
      await refresh();
    }),
  );

  // ---- 4. try it ----
  const tryNow = h('div', {});
  replace(steps.tried.body, h('p', { class: 'muted' }, 'Ask what a customer would ask: the answer comes from your agent over the website chat, exactly as a customer gets it (the conversation shows in the Inbox too).'), tryNow);

  function paint() {
    const { knowledgeBases, agents, integrations, done } = state.data;
    if (state.answered) done.tried = true;
    for (const [key, s] of Object.entries(steps)) s.setDone(done[key]);
    const count = Object.values(done).filter(Boolean).length;
    summary.textContent = count === 4 ? 'All four steps done: your agent answers customers. Their conversations show in the Inbox.' : `${count} of 4 steps done.`;

    const answering = done.helpCentre ? knowledgeBases.filter((k) => k.chunks > 0) : [];
    replace(kbNow, answering.length ? ['Answering from ', answering.map((k, i) => [i ? ', ' : '', h('a', { href: `#/knowledge/${seg(k.id)}` }, k.name)]), '.'] : null);
    sampleButton.hidden = knowledgeBases.some((k) => k.name === SAMPLE_HELP_CENTRE_NAME);

    const kbName = (id) => knowledgeBases.find((k) => k.id === id)?.name;
    replace(agentNow, agents.length ? agents.map((a, i) => [i ? h('br') : null, `“${a.name}”`, kbName(a.knowledgeBaseId) ? ` answers from “${kbName(a.knowledgeBaseId)}”` : ' has no help centre yet', '.']) : null);
    agentForm.hidden = agents.length > 0;
    agentButton.disabled = knowledgeBases.length === 0;

    const webchat = integrations.find((it) => it.type === 'webchat');
    webchatButton.hidden = Boolean(webchat);
    webchatButton.disabled = agents.length === 0;
    replace(
      channelNow,
      integrations.length ? h('p', {}, integrations.map((it, i) => [i ? ', ' : '', `“${it.name}” (${CHANNEL_NAMES[it.type] ?? it.type})`]), ' connected.') : null,
      webchat ? copyField('Website chat snippet', `<script src="${location.origin}/widget.js" data-integration-id="${webchat.id}"></script>`, { buttonLabel: 'Copy snippet', multiline: true }) : null,
      webchat ? h('p', { class: 'hint' }, 'Paste it before </body> on every page that should show the chat.') : null,
    );

    const target = integrations.find(triable);
    if (target && state.chatFor !== target.id) {
      state.chat?.close();
      state.chatFor = target.id;
      state.chat = tryChat(target.id, {
        signal,
        onAnswered: () => {
          if (state.answered) return;
          state.answered = true;
          paint();
        },
      });
      replace(tryNow, state.chat.el);
    } else if (!target) {
      replace(
        tryNow,
        h('p', { class: 'notice' }, webchat ? `“${webchat.name}” only opens on the pages of its allowed origins: add ${location.origin} to them on the Integrations page to try it here.` : 'Create the website chat first (step 3): this chat talks to the agent through it.'),
      );
    }
  }

  async function refresh() {
    try {
      state.data = await firstHour(signal);
      pageMsg.clear();
      paint();
    } catch (err) {
      if (err.name !== 'AbortError') pageMsg.error(err);
    }
  }

  replace(
    root,
    h('h1', {}, 'Get started'),
    summary,
    pageMsg.el,
    h('div', { class: 'steps' }, Object.values(steps).map((s) => s.el)),
  );
  await refresh();
  // A sample base still being read (a reload during step 1) keeps saying how far it is.
  const reading = state.data && !state.data.done.helpCentre ? state.data.knowledgeBases.find((k) => k.chunks > 0) ?? state.data.knowledgeBases[0] : null;
  if (reading) read(reading);
  return () => {
    clearTimeout(state.reading);
    state.chat?.close();
  };
}

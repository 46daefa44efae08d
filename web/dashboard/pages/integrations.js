// Integrations: create helpdesk / webchat / WhatsApp / Telegram integrations, show their
// webhook URL and (just after create or rotate) secret, WhatsApp's verify token with where
// to paste both in Meta's dashboard, rotate the secret or set the one the helpdesk issued,
// switch them on and off, register the helpdesk or Telegram webhook, show whether webhooks
// arrive (last webhook, refusals for a bad signature in the last hour and why), give webchat
// integrations their embed snippet, and change every setting the API has
// (integration-settings.js). Tokens and the app secret are write-only.
import { api, apiAll, seg } from '../api.js';
import { busy, checkbox, copyField, field, fieldErrors, h, messages, replace, select, time, uid } from '../dom.js';
import { ACCESS_TOKEN_HINT, APP_SECRET_HINT, BOT_TOKEN_HINT, GROUP_HINT, linesOf, ORIGINS_HINT, PHONE_NUMBER_HINT, settingsForm, writeOnlyInput } from './integration-settings.js';

const TYPE_LABEL = { helpdesk: 'Helpdesk', webchat: 'Webchat', whatsapp: 'WhatsApp', telegram: 'Telegram' };
/** Where the webhook is registered: by the service (helpdesk, Telegram) or by the company in Meta's dashboard (WhatsApp). */
const REGISTERED_AT = { helpdesk: 'the helpdesk', telegram: 'Telegram' };
const META_STEPS = 'In the Meta App Dashboard: WhatsApp › Configuration › Webhook › Edit — paste the webhook URL as “Callback URL” and the verify token as “Verify token”, then subscribe to the “messages” field.';

// webhookStatus: ok = registered and webhooks arrive (or none expected yet); failing = recent deliveries refused.
const WEBHOOK_BADGE = { ok: ['ok', 'Webhook OK'], failing: ['failing', 'Webhook failing'], pending: ['pending', 'Webhook pending'] };

const storedText = (stored) => (stored ? 'stored (hidden)' : h('span', { class: 'muted' }, 'not set'));

export function render(root, { signal }) {
  const state = { integrations: [], agents: [], secrets: new Map(), notes: new Map(), editing: null };
  const list = h('div', { class: 'cards', 'aria-live': 'off' });
  const listMsg = messages();

  // ---- create form ----
  const type = select(
    [
      { value: 'helpdesk', label: 'Helpdesk (Chat2Desk)' },
      { value: 'webchat', label: 'Webchat widget' },
      { value: 'whatsapp', label: 'WhatsApp (Cloud API)' },
      { value: 'telegram', label: 'Telegram bot' },
    ],
    { name: 'type' },
  );
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const agent = h('select', { name: 'agentId' });
  const agentHint = h('span', {}, 'The AI agent that answers this channel.');
  const apiToken = h('input', { type: 'password', name: 'apiToken', autocomplete: 'off', spellcheck: 'false' });
  const apiUrl = h('input', { type: 'url', name: 'apiUrl', placeholder: 'https://api.chat2desk.com', spellcheck: 'false' });
  const region = select([{ value: '', label: 'Find automatically' }, { value: 'global', label: 'Global' }, { value: 'europe', label: 'Europe' }], { name: 'region' });
  const handoffGroup = h('input', { type: 'number', name: 'handoffGroupId', min: '1', step: '1', inputmode: 'numeric' });
  const helpdeskFields = h(
    'div',
    { class: 'grid-2' },
    field('API token', apiToken, 'From the helpdesk’s settings (API). Stored encrypted, never shown again.'),
    field('API URL (optional)', apiUrl, 'Leave empty to use the region.'),
    field('Region (optional)', region, 'Automatic tries the global and the Europe instance.'),
    field('Handoff group ID (optional)', handoffGroup, GROUP_HINT),
  );
  const origins = h('textarea', { name: 'allowedOrigins', rows: 2, spellcheck: 'false', placeholder: 'https://shop.example.com', dataset: { expects: 'web addresses such as https://shop.example.com: the scheme and the host, no path' } });
  const webchatFields = h('div', {}, field('Allowed origins', origins, ORIGINS_HINT));
  const phoneNumberId = h('input', { type: 'text', name: 'phoneNumberId', inputmode: 'numeric', spellcheck: 'false', maxlength: '32', placeholder: '106540352242922' });
  const accessToken = writeOnlyInput('accessToken', false);
  const appSecret = writeOnlyInput('appSecret', false, { maxlength: '512' });
  const whatsappFields = h(
    'div',
    { class: 'grid-2' },
    field('Phone number ID', phoneNumberId, PHONE_NUMBER_HINT),
    field('Access token', accessToken, ACCESS_TOKEN_HINT),
    field('App secret', appSecret, APP_SECRET_HINT),
  );
  const botToken = writeOnlyInput('botToken', false, { maxlength: '121' });
  const telegramFields = h('div', { class: 'grid-2' }, field('Bot token', botToken, BOT_TOKEN_HINT));
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create integration');
  const formMsg = messages();
  const formErrors = fieldErrors();
  const form = h(
    'form',
    { method: 'post', class: 'panel', 'aria-labelledby': 'new-integration', novalidate: true },
    h('h2', { id: 'new-integration' }, 'New integration'),
    h('div', { class: 'grid-2' }, field('Type', type), field('Name', name), field('Agent', agent, agentHint)),
    helpdeskFields,
    webchatFields,
    whatsappFields,
    telegramFields,
    h('div', { class: 'actions' }, createButton),
    formMsg.el,
  );
  const syncType = () => {
    helpdeskFields.hidden = type.value !== 'helpdesk';
    webchatFields.hidden = type.value !== 'webchat';
    whatsappFields.hidden = type.value !== 'whatsapp';
    telegramFields.hidden = type.value !== 'telegram';
  };
  type.addEventListener('change', syncType);
  syncType();

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    if (!name.value.trim()) {
      formMsg.error(new Error('Please give the integration a name.'));
      name.focus();
      return;
    }
    const body = { type: type.value, name: name.value.trim() };
    if (agent.value) body.agentId = Number(agent.value);
    if (type.value === 'helpdesk') {
      if (apiToken.value.trim()) body.apiToken = apiToken.value.trim();
      if (apiUrl.value.trim()) body.apiUrl = apiUrl.value.trim();
      if (region.value) body.region = region.value;
      if (handoffGroup.value.trim()) body.handoffGroupId = Number(handoffGroup.value);
    } else if (type.value === 'whatsapp') {
      body.phoneNumberId = phoneNumberId.value.trim();
      body.accessToken = accessToken.value.trim();
      body.appSecret = appSecret.value.trim();
    } else if (type.value === 'telegram') body.botToken = botToken.value.trim();
    else if (linesOf(origins.value).length) body.allowedOrigins = linesOf(origins.value);
    try {
      const { integration, webhookError } = await busy(createButton, () => api('POST', '/api/integrations', body, { signal }));
      // Telegram's secret is Telegram's business (set with the webhook): only the helpdesk and the widget's owner need theirs.
      if (integration.webhookSecret && (integration.type === 'helpdesk' || integration.type === 'webchat')) state.secrets.set(integration.id, integration.webhookSecret);
      state.notes.set(integration.id, createdNote(integration, webhookError));
      form.reset();
      syncType();
      fillAgents();
      formMsg.ok(`Integration “${integration.name}” created.`);
      upsert(integration);
    } catch (err) {
      if (err.name === 'AbortError') return;
      formErrors.report(formMsg, err, { type, name, agentId: agent, apiToken, apiUrl, region, handoffGroupId: handoffGroup, allowedOrigins: origins, phoneNumberId, accessToken, appSecret, botToken });
    } finally {
      // Write-only secrets do not stay in the page.
      for (const input of [accessToken, appSecret, botToken]) input.value = '';
    }
  });

  /** What the new card says first: whether its webhook is registered (and if not why), what to copy now. */
  function createdNote(integration, webhookError) {
    const at = REGISTERED_AT[integration.type];
    if (integration.type === 'whatsapp') return `Created. ${META_STEPS}`;
    // A helpdesk with a token and a Telegram bot register their webhook at creation: say whether it did, and if not why.
    const registration = !at
      ? ''
      : webhookError
        ? ` The webhook is not registered yet: ${webhookError.message} Fix it, then use Register webhook.`
        : integration.webhookStatus === 'ok'
          ? ` The webhook is registered at ${at}.`
          : ' Add the API token to register the webhook.';
    return `Created.${registration}${integration.type === 'telegram' ? '' : ' Copy the webhook secret now: it is shown only once.'}`;
  }

  function fillAgents() {
    const keep = agent.value;
    replace(agent, h('option', { value: '' }, state.agents.length ? 'Choose an agent' : 'No agents yet'));
    for (const a of state.agents) agent.append(h('option', { value: String(a.id) }, a.name));
    replace(agentHint, ...(state.agents.length ? ['The AI agent that answers this channel.'] : ['No agents yet: ', h('a', { href: '#/agents' }, 'create one first'), '.']));
    if (keep && state.agents.some((a) => String(a.id) === keep)) agent.value = keep;
    else if (state.agents.length === 1) agent.value = String(state.agents[0].id);
  }

  // ---- list ----
  function upsert(integration) {
    const i = state.integrations.findIndex((x) => x.id === integration.id);
    if (i >= 0) state.integrations[i] = { ...state.integrations[i], ...integration };
    else state.integrations.push(integration);
    renderList();
  }

  function renderList(focusKey) {
    if (!state.integrations.length) {
      replace(list, h('p', { class: 'muted empty' }, 'No integrations yet. Create one above.'));
      return;
    }
    replace(list, state.integrations.map(card));
    if (focusKey) list.querySelector(`[data-focus="${CSS.escape(focusKey)}"]`)?.focus();
  }

  function card(it) {
    const headingId = uid('integration');
    const msg = messages();
    const note = state.notes.get(it.id);
    if (note) msg.ok(note);
    const agentName = state.agents.find((a) => a.id === it.agentId)?.name;
    const isHelpdesk = it.type === 'helpdesk';
    const isTelegram = it.type === 'telegram';
    const isWhatsapp = it.type === 'whatsapp';
    // Channels whose messages arrive by webhook: they show its URL, health badge and activity.
    const hasWebhook = isHelpdesk || isTelegram || isWhatsapp;
    const registeredAt = REGISTERED_AT[it.type];
    const registered = it.webhookStatus === 'ok' || Boolean(it.webhookRegisteredAt);

    const active = checkbox('Active', { checked: it.active !== false, dataset: { focus: `active-${it.id}` } });
    active.input.addEventListener('change', async () => {
      const want = active.input.checked;
      try {
        const { integration } = await api('PATCH', `/api/integrations/${seg(it.id)}`, { active: want }, { signal });
        state.notes.set(it.id, integration.active ? 'Active: webhooks are accepted.' : 'Inactive: webhooks are refused (403).');
        upsert(integration);
        renderList(`active-${it.id}`);
      } catch (err) {
        if (err.name === 'AbortError') return;
        active.input.checked = !want;
        msg.error(err);
      }
    });

    const rotate = h('button', { type: 'button', class: 'secondary', dataset: { focus: `rotate-${it.id}` } }, 'Rotate secret');
    rotate.addEventListener('click', async () => {
      try {
        const { integration } = await busy(rotate, () => api('POST', `/api/integrations/${seg(it.id)}/rotate-secret`, undefined, { signal }));
        if (integration.webhookSecret && !isTelegram) state.secrets.set(it.id, integration.webhookSecret);
        state.notes.set(
          it.id,
          isTelegram ? 'New secret registered with Telegram. The previous one keeps working for a grace period.' : 'New secret created: copy it now. The previous one keeps working for a grace period.',
        );
        upsert(integration);
        renderList(`rotate-${it.id}`);
      } catch (err) {
        if (err.name !== 'AbortError') msg.error(err);
      }
    });

    let registerButton = null;
    if (registeredAt) {
      registerButton = h('button', { type: 'button', class: registered ? 'secondary' : 'primary', dataset: { focus: `register-${it.id}` } }, registered ? 'Re-register webhook' : 'Register webhook');
      registerButton.addEventListener('click', async () => {
        msg.ok(`Registering the webhook at ${registeredAt}…`);
        try {
          const out = await busy(registerButton, () => api('POST', `/api/integrations/${seg(it.id)}/register-webhook`, {}, { signal }));
          let fresh = { ...it, webhookStatus: it.webhookStatus === 'failing' ? 'failing' : 'ok', webhookRegisteredAt: out?.webhookRegisteredAt ?? new Date().toISOString() };
          try {
            fresh = (await api('GET', `/api/integrations/${seg(it.id)}`, undefined, { signal })).integration;
          } catch {
            /* keep the local view */
          }
          state.notes.set(it.id, `Webhook registered at ${registeredAt}.`);
          upsert(fresh);
          renderList(`register-${it.id}`);
        } catch (err) {
          if (err.name !== 'AbortError') msg.error(err);
        }
      });
    }

    // The secret the helpdesk issued (Chat2Desk signs with its own): write-only, the old one keeps a grace period.
    let secretForm = null;
    if (isHelpdesk) {
      const secretInput = h('input', { type: 'password', name: 'webhookSecret', autocomplete: 'off', spellcheck: 'false', minlength: '16', maxlength: '512' });
      const secretButton = h('button', { type: 'submit', class: 'secondary', dataset: { focus: `secret-${it.id}` } }, 'Use this secret');
      secretForm = h(
        'form',
        { method: 'post', class: 'inline-form' },
        field('Secret issued by the helpdesk', secretInput, 'If the helpdesk shows its own signing secret, paste it here. Stored encrypted, never shown again.'),
        h('div', { class: 'actions' }, secretButton),
      );
      secretForm.addEventListener('submit', async (e) => {
        e.preventDefault();
        const value = secretInput.value.trim();
        if (!value) {
          msg.error(new Error('Paste the secret the helpdesk shows first.'));
          secretInput.focus();
          return;
        }
        try {
          const { integration } = await busy(secretButton, () => api('PATCH', `/api/integrations/${seg(it.id)}`, { webhookSecret: value }, { signal }));
          state.secrets.delete(it.id);
          state.notes.set(it.id, 'The helpdesk’s secret is set: webhooks signed with it are accepted. The previous secret keeps working for a grace period.');
          upsert(integration);
          renderList(`secret-${it.id}`);
        } catch (err) {
          if (err.name !== 'AbortError') msg.error(err);
        }
      });
    }

    // Every setting of the integration, in a form opened on demand (one card at a time).
    const editing = state.editing === it.id;
    const settingsButton = h('button', { type: 'button', class: 'secondary', 'aria-expanded': String(editing), dataset: { focus: `settings-${it.id}` } }, editing ? 'Close settings' : 'Edit settings');
    settingsButton.addEventListener('click', () => {
      state.editing = editing ? null : it.id;
      state.notes.delete(it.id);
      renderList(editing ? `settings-${it.id}` : `settings-name-${it.id}`);
    });
    const settings = editing
      ? settingsForm(it, {
          agents: state.agents,
          signal,
          onSaved: (integration, webhookError) => {
            state.editing = null;
            state.notes.set(it.id, webhookError ? `Settings saved, but the webhook is not registered: ${webhookError.message}` : 'Settings saved.');
            upsert(integration);
            renderList(`settings-${it.id}`);
          },
          onCancel: () => {
            state.editing = null;
            renderList(`settings-${it.id}`);
          },
        })
      : null;

    const failures = it.signatureFailuresLastHour ?? 0;
    const lastFailure = it.lastSignatureFailure;
    const secret = state.secrets.get(it.id);
    const details = h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Agent'),
      h('dd', {}, agentName ?? (it.agentId ? `#${it.agentId}` : '—')),
      isHelpdesk ? [h('dt', {}, 'API URL'), h('dd', { class: 'mono' }, it.apiUrl || '—')] : null,
      isHelpdesk ? [h('dt', {}, 'Handoff group'), h('dd', {}, it.handoffGroupId ?? h('span', { class: 'muted' }, 'none (no transfer)'))] : null,
      it.type === 'webchat' ? [h('dt', {}, 'Allowed origins'), h('dd', { class: 'mono' }, it.allowedOrigins?.length ? it.allowedOrigins.join(', ') : h('span', { class: 'muted' }, 'any page'))] : null,
      isWhatsapp ? [h('dt', {}, 'Phone number ID'), h('dd', { class: 'mono' }, it.phoneNumberId ?? '—')] : null,
      isWhatsapp ? [h('dt', {}, 'Access token'), h('dd', {}, storedText(it.hasApiToken))] : null,
      isWhatsapp ? [h('dt', {}, 'App secret'), h('dd', {}, storedText(it.hasAppSecret))] : null,
      isTelegram ? [h('dt', {}, 'Bot token'), h('dd', {}, storedText(it.hasApiToken))] : null,
      registeredAt ? [h('dt', {}, 'Webhook registered'), h('dd', { dataset: { fact: 'registered' } }, it.webhookRegisteredAt ? time(it.webhookRegisteredAt) : h('span', { class: 'muted' }, 'not yet'))] : null,
      hasWebhook ? [h('dt', {}, 'Last webhook'), h('dd', { dataset: { fact: 'last-webhook' } }, it.lastWebhookAt ? time(it.lastWebhookAt) : h('span', { class: 'muted' }, 'none received yet'))] : null,
      hasWebhook
        ? [
            h('dt', {}, 'Refused (last hour)'),
            h(
              'dd',
              { dataset: { fact: 'refused' } },
              failures ? `${failures} for a bad signature` : 'none',
              lastFailure && failures ? [h('br'), h('span', { class: 'small' }, 'Last: ', time(lastFailure.at), ` — ${lastFailure.message ?? lastFailure.reason}`)] : null,
            ),
          ]
        : null,
      h('dt', {}, 'Created'),
      h('dd', {}, time(it.createdAt)),
    );
    const [badgeClass, badgeText] = WEBHOOK_BADGE[it.webhookStatus] ?? WEBHOOK_BADGE.pending;

    const origin = location.origin;
    const snippet = `<script src="${origin}/widget.js" data-integration-id="${it.id}"></script>`;
    // The host page names a signed-in customer (web/widget/identity.js); the hash is made by its server with the webhook secret.
    const identifySnippet = `<script>\nwindow.MAS = window.MAS || { q: [], identify: function (u) { this.q.push(['identify', u]); } };\nMAS.identify({ id: 'USER_ID', name: 'NAME', email: 'EMAIL', hash: 'HEX_HMAC_SHA256_OF_USER_ID_WITH_THE_WEBHOOK_SECRET' });\n</script>\n${snippet}`;

    return h(
      'article',
      { class: ['card', it.active === false && 'inactive'], 'aria-labelledby': headingId, dataset: { integrationId: String(it.id) } },
      h(
        'header',
        { class: 'card-head' },
        h('h3', { id: headingId }, it.name),
        h('span', { class: 'tag' }, TYPE_LABEL[it.type] ?? it.type),
        hasWebhook ? h('span', { class: ['badge', badgeClass], title: it.webhookStatus === 'failing' && lastFailure ? lastFailure.message ?? '' : '' }, badgeText) : null,
        it.active === false ? h('span', { class: 'badge off' }, 'Inactive') : null,
      ),
      details,
      // Webchat has no webhook (its widget speaks WebSocket): it gets the embed snippet instead.
      hasWebhook && it.webhookUrl ? copyField('Webhook URL', it.webhookUrl, { buttonLabel: 'Copy webhook URL' }) : null,
      isWhatsapp && it.verifyToken ? copyField('Verify token', it.verifyToken, { buttonLabel: 'Copy verify token' }) : null,
      isWhatsapp ? h('p', { class: 'small muted', dataset: { fact: 'meta-steps' } }, META_STEPS) : null,
      secret ? copyField('Webhook secret', secret, { buttonLabel: 'Copy secret' }) : null,
      it.type === 'webchat' ? copyField('Embed snippet', snippet, { buttonLabel: 'Copy snippet', multiline: true }) : null,
      it.type === 'webchat' ? copyField('With a signed-in customer (their name in the inbox; hash computed by your server)', identifySnippet, { buttonLabel: 'Copy identity snippet', multiline: true }) : null,
      // WhatsApp's secret is Meta's app secret (changed in the settings): nothing to rotate here.
      h('div', { class: 'actions' }, active.el, isWhatsapp ? null : rotate, registerButton, settingsButton),
      settings,
      secretForm,
      msg.el,
    );
  }

  async function load() {
    try {
      const [integrations, agents] = await Promise.all([apiAll('/api/integrations', 'integrations', { signal }), apiAll('/api/agents', 'agents', { signal })]);
      state.integrations = integrations.integrations;
      state.agents = agents.agents;
      fillAgents();
      renderList();
      listMsg.clear();
    } catch (err) {
      if (err.name !== 'AbortError') {
        replace(list);
        listMsg.error(err);
      }
    }
  }

  root.append(
    h('h1', {}, 'Integrations'),
    h('p', { class: 'lead muted' }, 'Connect a helpdesk, a webchat widget, WhatsApp or a Telegram bot; the chosen agent answers its customers.'),
    form,
    h('section', { 'aria-labelledby': 'your-integrations' }, h('h2', { id: 'your-integrations' }, 'Your integrations'), listMsg.el, list),
  );
  fillAgents();
  load();
}

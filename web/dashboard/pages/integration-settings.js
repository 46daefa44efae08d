// The settings form of one integration (PATCH /api/integrations/:id): name, agent, and by
// type the helpdesk's address, region, API token (write-only), handoff group, the webchat's
// allowed origins and pre-chat form, WhatsApp's phone number id, access token and app secret
// (both write-only), or the Telegram bot token (write-only; a new one re-registers the
// webhook). Only what changed is sent: a new address or region makes the API ask the
// helpdesk again, and it wants the token with it.
import { api, seg } from '../api.js';
import { busy, field, fieldErrors, h, messages, secretInput, select } from '../dom.js';

export const ORIGINS_HINT = 'The pages that may open the chat, one per line, e.g. https://shop.example.com. Empty: any page.';
export const PRECHAT_HINT = 'Asked in the chat before the first message of a visitor your page did not identify (MAS.identify). The answers name the lead; they are not verified.';
const PRECHAT_OPTIONS = [
  { value: 'off', label: 'Off: ask nothing' },
  { value: 'name', label: 'Ask the name' },
  { value: 'name_email', label: 'Ask the name and email' },
];
export const STORED_PLACEHOLDER = 'stored — enter a new one to replace';
export const PHONE_NUMBER_HINT = 'Meta App Dashboard › WhatsApp › API Setup: the “Phone number ID” (digits), not the phone number.';
export const ACCESS_TOKEN_HINT = 'A permanent (system user) access token with whatsapp_business_messaging. Stored encrypted, never shown again.';
export const APP_SECRET_HINT = 'Meta App Dashboard › App settings › Basic › App secret: it signs the webhooks (X-Hub-Signature-256). Stored encrypted, never shown again.';
export const BOT_TOKEN_HINT = 'From @BotFather (/newbot or /token), like 123456789:AAE…. Stored encrypted, never shown again; the webhook is registered with it.';

/** A write-only secret: a password input that is empty, saying whether one is stored. */
export function writeOnlyInput(name, stored, props = {}) {
  return h('input', { type: 'password', name, autocomplete: 'off', spellcheck: 'false', maxlength: '4096', placeholder: stored ? STORED_PLACEHOLDER : '', ...props });
}

export const GROUP_HINT = 'The helpdesk operator group a conversation handed to a person is transferred to. Empty: no transfer.';

/** Non-empty lines (or comma-separated items) of a text area. */
export const linesOf = (text) => text.split(/[\n,]+/).map((l) => l.trim()).filter(Boolean);

const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function settingsForm(it, { agents, signal, onSaved, onCancel }) {
  const isHelpdesk = it.type === 'helpdesk';
  const isWebchat = it.type === 'webchat';
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '200', value: it.name, dataset: { focus: `settings-name-${it.id}` } });
  const agent = h('select', { name: 'agentId' }, agents.map((a) => h('option', { value: String(a.id) }, a.name)));
  if (it.agentId === null || !agents.some((a) => a.id === it.agentId)) agent.prepend(h('option', { value: '' }, it.agentId ? `#${it.agentId}` : 'None'));
  agent.value = it.agentId && agents.some((a) => a.id === it.agentId) ? String(it.agentId) : '';

  const apiUrl = h('input', { type: 'url', name: 'apiUrl', spellcheck: 'false', maxlength: '2000', value: it.apiUrl ?? '', placeholder: 'https://api.chat2desk.com' });
  const regionOptions = [{ value: 'global', label: 'Global' }, { value: 'europe', label: 'Europe' }];
  const region = select(it.region ? regionOptions : [{ value: '', label: 'Not set' }, ...regionOptions], { name: 'region' });
  region.value = it.region ?? '';
  const apiToken = secretInput('apiToken', 'Remove the stored token', { autocomplete: 'off' });
  apiToken.show(it.hasApiToken);
  const handoffGroup = h('input', { type: 'number', name: 'handoffGroupId', min: '1', step: '1', inputmode: 'numeric', value: it.handoffGroupId == null ? '' : String(it.handoffGroupId) });
  const origins = h('textarea', { name: 'allowedOrigins', rows: 3, spellcheck: 'false', placeholder: 'https://shop.example.com', dataset: { expects: 'web addresses such as https://shop.example.com: the scheme and the host, no path' } });
  origins.value = (it.allowedOrigins ?? []).join('\n');
  const prechat = select(PRECHAT_OPTIONS, { name: 'prechatForm' });
  prechat.value = it.prechatForm ?? 'off';
  const phoneNumberId = h('input', { type: 'text', name: 'phoneNumberId', inputmode: 'numeric', spellcheck: 'false', maxlength: '32', value: it.phoneNumberId ?? '' });
  const accessToken = writeOnlyInput('accessToken', it.hasApiToken);
  const appSecret = writeOnlyInput('appSecret', it.hasAppSecret, { maxlength: '512' });
  const botToken = writeOnlyInput('botToken', it.hasApiToken, { maxlength: '121' });
  const storedHint = (hint) => `Stored (hidden): leave empty to keep it. ${hint}`;

  const save = h('button', { type: 'submit', class: 'primary' }, 'Save settings');
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  cancel.addEventListener('click', onCancel);
  const msg = messages();
  const errors = fieldErrors();
  const form = h(
    'form',
    { method: 'post', class: 'settings-form', 'aria-label': `Settings of ${it.name}`, novalidate: true },
    h('div', { class: 'grid-2' }, field('Name', name), field('Agent', agent, 'The AI agent that answers this channel.')),
    isHelpdesk
      ? [
          h(
            'div',
            { class: 'grid-2' },
            field('API URL', apiUrl, 'The helpdesk instance. Changing it (or the region) needs the API token again.'),
            field('Region', region, 'Global or Europe instance; an API URL typed above wins.'),
            field('API token', apiToken.input, it.hasApiToken ? 'A token is stored (hidden). Leave empty to keep it.' : 'No token stored: replies cannot be sent. Stored encrypted, never shown again.'),
            field('Handoff group ID', handoffGroup, GROUP_HINT),
          ),
          apiToken.forget,
        ]
      : isWebchat
        ? h('div', { class: 'grid-2' }, field('Allowed origins', origins, ORIGINS_HINT), field('Pre-chat form', prechat, PRECHAT_HINT))
        : it.type === 'whatsapp'
          ? h(
              'div',
              { class: 'grid-2' },
              field('Phone number ID', phoneNumberId, PHONE_NUMBER_HINT),
              field('Access token', accessToken, storedHint(ACCESS_TOKEN_HINT)),
              field('App secret', appSecret, storedHint(APP_SECRET_HINT)),
            )
          : it.type === 'telegram'
            ? h('div', { class: 'grid-2' }, field('Bot token', botToken, storedHint(BOT_TOKEN_HINT)))
            : null,
    h('div', { class: 'actions' }, save, cancel),
    msg.el,
  );

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    const body = {};
    if (name.value.trim() !== it.name) body.name = name.value.trim();
    if (agent.value && Number(agent.value) !== it.agentId) body.agentId = Number(agent.value);
    if (isHelpdesk) {
      const url = apiUrl.value.trim() || null;
      if (url !== (it.apiUrl ?? null)) body.apiUrl = url;
      if (region.value && region.value !== it.region) body.region = region.value;
      const token = apiToken.change();
      if (token !== undefined) body.apiToken = token;
      const group = handoffGroup.value.trim() === '' ? null : Number(handoffGroup.value);
      if (group !== (it.handoffGroupId ?? null)) body.handoffGroupId = group;
    } else if (isWebchat) {
      if (!same(linesOf(origins.value), it.allowedOrigins ?? [])) body.allowedOrigins = linesOf(origins.value);
      if (prechat.value !== (it.prechatForm ?? 'off')) body.prechatForm = prechat.value;
    } else if (it.type === 'whatsapp') {
      if (phoneNumberId.value.trim() !== (it.phoneNumberId ?? '')) body.phoneNumberId = phoneNumberId.value.trim();
      if (accessToken.value.trim()) body.accessToken = accessToken.value.trim();
      if (appSecret.value.trim()) body.appSecret = appSecret.value.trim();
    } else if (it.type === 'telegram' && botToken.value.trim()) body.botToken = botToken.value.trim();
    if (!Object.keys(body).length) {
      msg.ok('Nothing changed.');
      return;
    }
    try {
      // A new bot token re-registers the Telegram webhook: webhookError says whether it worked.
      const { integration, webhookError } = await busy(save, () => api('PATCH', `/api/integrations/${seg(it.id)}`, body, { signal }));
      onSaved(integration, webhookError ?? null);
    } catch (err) {
      for (const input of [apiToken.input, accessToken, appSecret, botToken]) input.value = '';
      if (err.name === 'AbortError') return;
      errors.report(msg, err, { name, agentId: agent, apiUrl, region, apiToken: apiToken.input, handoffGroupId: handoffGroup, allowedOrigins: origins, prechatForm: prechat, phoneNumberId, accessToken, appSecret, botToken });
    }
  });
  return form;
}

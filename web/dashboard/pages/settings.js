// Settings: company API tokens (shown once, with who made each), canned replies, credit
// balance, the daily spend cap and the ledger, pipelines. Operators see the canned replies (read
// only), the credit and the pipelines; tokens, the cap and canned-reply changes are for owners
// and admins (the API answers operators 403).
import { api, apiAll, seg } from '../api.js';
import { append, busy, copyField, field, fieldErrors, h, messages, replace, table, time } from '../dom.js';
import { userName } from '../words.js';
import { cannedReplies } from './canned-replies.js';
import { loadPeople } from './people.js';

const LEDGER_KIND = { signup_bonus: 'Sign-up bonus', model_usage: 'Model usage' };

export function render(root, { signal, me, role }) {
  const manages = role !== 'operator';
  // ---- API tokens ----
  const tokensEl = h('div');
  const tokensMsg = messages();
  const created = h('div', { class: 'once', hidden: true });
  const tokenName = h('input', { type: 'text', name: 'name', required: true, maxlength: '100' });
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create token');
  const form = h('form', { method: 'post', class: 'row' }, field('Token name', tokenName, 'What the token is for, e.g. “CRM sync”.'), createButton);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!tokenName.value.trim()) {
      tokensMsg.error(new Error('Please name the token.'));
      tokenName.focus();
      return;
    }
    try {
      const { apiToken } = await busy(createButton, () => api('POST', '/api/api-tokens', { name: tokenName.value.trim() }, { signal }));
      tokenName.value = '';
      replace(
        created,
        h('p', {}, h('strong', {}, `Token “${apiToken.name}” created. `), 'Copy it now: it is shown only once. Use it as ', h('code', {}, 'Authorization: Bearer <token>'), '.'),
        copyField('New API token', apiToken.token, { buttonLabel: 'Copy token' }),
      );
      created.hidden = false;
      tokensMsg.ok(`Token “${apiToken.name}” created.`);
      created.querySelector('input')?.focus();
      loadTokens();
    } catch (err) {
      if (err.name !== 'AbortError') tokensMsg.error(err);
    }
  });

  // Who made each token, by name. A live token's maker is on the team (removing them revokes
  // it), read with the tokens each time: a teammate who joined since made one too.
  const madeBy = (t, people) => (people.me?.id === t.createdBy ? 'You' : userName(people.users.get(t.createdBy)));

  async function loadTokens() {
    try {
      const [{ apiTokens }, people] = await Promise.all([apiAll('/api/api-tokens', 'apiTokens', { signal }), loadPeople(signal, me)]);
      replace(
        tokensEl,
        table(
          '!API tokens',
          [
            { label: 'Name', cell: (t) => t.name },
            { label: 'Prefix', cell: (t) => h('code', {}, `${t.prefix}…`) },
            { label: 'Made by', cell: (t) => madeBy(t, people) },
            { label: 'Created', cell: (t) => time(t.createdAt) },
            { label: 'Last used', cell: (t) => (t.lastUsedAt ? time(t.lastUsedAt) : h('span', { class: 'muted' }, 'Never')) },
            {
              label: 'Actions',
              cell: (t) => {
                const revoke = h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke ${t.name}` }, 'Revoke');
                revoke.addEventListener('click', async () => {
                  if (!window.confirm(`Revoke the token “${t.name}”? Clients using it stop working at once.`)) return;
                  try {
                    await busy(revoke, () => api('DELETE', `/api/api-tokens/${seg(t.id)}`, undefined, { signal }));
                    tokensMsg.ok(`Token “${t.name}” revoked.`);
                    loadTokens();
                  } catch (err) {
                    if (err.name !== 'AbortError') tokensMsg.error(err);
                  }
                });
                return revoke;
              },
            },
          ],
          apiTokens,
          { empty: 'No API tokens yet.' },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError') tokensMsg.error(err);
    }
  }

  // ---- billing ----
  const balanceEl = h('p', { class: 'balance' }, h('span', { class: 'muted' }, 'Loading…'));
  const ledgerEl = h('div');
  const billingMsg = messages();
  const ledgerCount = h('p', { class: 'muted small', role: 'status' });
  const moreLedger = h('button', { type: 'button', class: 'secondary' }, 'Show older entries');
  moreLedger.hidden = true;
  const ledger = { entries: [], total: 0 };
  // The ledger comes newest first, a page at a time (GET /api/billing has the first page).
  moreLedger.addEventListener('click', async () => {
    try {
      const out = await busy(moreLedger, () => api('GET', `/api/billing/ledger?limit=50&offset=${ledger.entries.length}`, undefined, { signal }));
      ledger.entries.push(...(out.ledger ?? []));
      ledger.total = out.total ?? ledger.total;
      renderLedger();
    } catch (err) {
      if (err.name !== 'AbortError') billingMsg.error(err);
    }
  });
  function renderLedger() {
    ledgerCount.textContent = ledger.total > ledger.entries.length ? `${ledger.entries.length} of ${ledger.total} entries` : '';
    moreLedger.hidden = ledger.entries.length >= ledger.total;
    replace(
      ledgerEl,
      table(
        'Credit ledger',
        [
          { label: 'Date', cell: (e) => time(e.at) },
          { label: 'Entry', cell: (e) => LEDGER_KIND[e.kind] ?? e.kind },
          { label: 'Amount (USD)', class: 'num', cell: (e) => e.amountUsd },
          { label: 'Balance after', class: 'num', cell: (e) => e.balanceAfterUsd },
          { label: 'Model', cell: (e) => e.model ?? '—' },
          { label: 'Tokens in / out', class: 'num', cell: (e) => (e.inputTokens != null ? `${e.inputTokens} / ${e.outputTokens ?? 0}` : '—') },
          { label: 'Conversation', cell: (e) => (e.conversationId ? h('a', { href: `#/conversations/${seg(e.conversationId)}` }, `#${e.conversationId}`) : '—') },
        ],
        ledger.entries,
        { empty: 'No ledger entries.' },
      ),
    );
  }
  // The company's daily spend cap (PATCH /api/billing): past it, conversations go to a person.
  const spendEl = h('p', { class: 'muted small' });
  const cap = h('input', { type: 'text', name: 'spendCapUsdPerDay', inputmode: 'decimal', placeholder: 'No cap', spellcheck: 'false', maxlength: '20', dataset: { expects: 'an amount in USD such as 12.50 (a dot, at most 6 decimals)' } });
  const capButton = h('button', { type: 'submit', class: 'secondary' }, 'Save spend cap');
  const capMsg = messages();
  const capErrors = fieldErrors();
  const capForm = h(
    'form',
    { method: 'post', class: 'row', 'aria-label': 'Spend cap', novalidate: true },
    field('Spend cap per day (USD)', cap, 'The company’s model spend per UTC day; past it, conversations go to a person until the next day. Empty: no cap.'),
    capButton,
  );
  const capReadOnly = h('p', {});
  capForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    capErrors.clear();
    try {
      const { billing } = await busy(capButton, () => api('PATCH', '/api/billing', { spendCapUsdPerDay: cap.value.trim() || null }, { signal }));
      showBilling(billing);
      capMsg.ok(billing.spendCapUsdPerDay ? `Spend cap set to ${billing.spendCapUsdPerDay} USD per day.` : 'No spend cap now.');
    } catch (err) {
      if (err.name === 'AbortError') return;
      capErrors.report(capMsg, err, { spendCapUsdPerDay: cap });
    }
  });
  function showBilling(billing) {
    replace(balanceEl, 'Balance: ', h('strong', { class: 'amount', dataset: { balance: billing.balanceUsd } }, `${billing.balanceUsd} USD`));
    spendEl.textContent = `Spent today (UTC): ${billing.spentTodayUsd ?? '0.00'} USD${billing.reservedUsd && Number(billing.reservedUsd) > 0 ? ` · held by model calls in flight: ${billing.reservedUsd} USD` : ''}`;
    cap.value = billing.spendCapUsdPerDay ?? '';
    capReadOnly.textContent = billing.spendCapUsdPerDay ? `Spend cap: ${billing.spendCapUsdPerDay} USD per day.` : 'No daily spend cap.';
  }

  async function loadBilling() {
    try {
      const { billing } = await api('GET', '/api/billing', undefined, { signal });
      showBilling(billing);
      ledger.entries = [...(billing.ledger ?? [])];
      ledger.total = billing.ledgerTotal ?? ledger.entries.length;
      renderLedger();
    } catch (err) {
      if (err.name !== 'AbortError') {
        replace(balanceEl);
        billingMsg.error(err);
      }
    }
  }

  // ---- pipelines ----
  const pipelinesEl = h('div');
  const pipelinesMsg = messages();
  async function loadPipelines() {
    try {
      const { pipelines } = await apiAll('/api/pipelines', 'pipelines', { signal });
      const sorted = [...pipelines].sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
      replace(
        pipelinesEl,
        sorted.length
          ? sorted.map((p) =>
              h(
                'div',
                { class: 'pipeline' },
                h('h3', {}, p.name, p.isDefault ? h('span', { class: 'tag' }, 'Default') : null),
                h(
                  'ol',
                  { class: 'stages', 'aria-label': `${p.name} stages` },
                  [...p.stages]
                    .sort((a, b) => a.position - b.position)
                    .map((s) => h('li', { class: ['stage', s.isWon && 'won', s.isLost && 'lost'] }, s.name, s.isWon ? h('span', { class: 'visually-hidden' }, ' (won)') : null, s.isLost ? h('span', { class: 'visually-hidden' }, ' (lost)') : null)),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No pipelines.'),
      );
    } catch (err) {
      if (err.name !== 'AbortError') pipelinesMsg.error(err);
    }
  }

  // dom.js append: the sections a role does not see are null, which Element.append would print.
  append(root, [
    h('h1', {}, 'Settings'),
    manages
      ? h(
          'section',
          { class: 'panel', 'aria-labelledby': 'tokens-title' },
          h('h2', { id: 'tokens-title' }, 'API tokens'),
          h('p', { class: 'muted' }, 'Company API tokens let scripts and servers call the API as an admin. A token is shown once, when it is created, and works while the teammate who made it stays on the team with their role: removing them or lowering their role revokes it.'),
          form,
          created,
          tokensMsg.el,
          tokensEl,
        )
      : null,
    cannedReplies({ signal, manages }),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'billing-title' },
      h('h2', { id: 'billing-title' }, 'Credits'),
      balanceEl,
      spendEl,
      manages ? [capForm, capMsg.el] : capReadOnly,
      billingMsg.el,
      ledgerEl,
      h('div', { class: 'row' }, ledgerCount, moreLedger),
    ),
    h('section', { class: 'panel', 'aria-labelledby': 'pipelines-title' }, h('h2', { id: 'pipelines-title' }, 'Pipelines'), pipelinesMsg.el, pipelinesEl),
  ]);
  if (manages) loadTokens();
  loadBilling();
  loadPipelines();
}

import t from 'tap';
import { loadConfig } from '../../lib/config.js';
import { CHANNEL_TRAITS, REPORTING_CHANNELS, sendingChannels, transfersDialogs, WEBHOOK_CHANNELS } from '../../lib/channels/registry.js';
import type { SendTarget } from '../../lib/channels/types.js';

/**
 * The registration is the one place the message path learns what a channel can do: the traits
 * a step and the outbox's SQL read before any sending half exists must say what each sending
 * half does, or a handoff plans a transfer nobody makes, or an uncertain send waits for a
 * report that never comes (or is sent again while its report sits in the journal).
 */
const config = loadConfig({ NODE_ENV: 'test' });
const sending = sendingChannels(config, { timeoutMs: 1000, historyPages: 1 });

t.test("every registered channel has both halves and traits, and each trait is its sending half's", async (t) => {
  const types = Object.keys(WEBHOOK_CHANNELS).sort();
  t.same(Object.keys(sending).sort(), types, 'a sending half per webhook half');
  t.same(Object.keys(CHANNEL_TRAITS).sort(), types, 'traits per channel');
  for (const type of types as (keyof typeof CHANNEL_TRAITS)[]) {
    const half = sending[type];
    t.equal(half.type, type, `${type}: the half registered under its own type`);
    t.equal(WEBHOOK_CHANNELS[type].type, type);
    t.equal(CHANNEL_TRAITS[type].transfersDialogs, typeof half.transfer === 'function', `${type}: transfersDialogs as its sending half transfers`);
    t.equal(CHANNEL_TRAITS[type].reportsDelivery, half.reportWithinMs !== undefined, `${type}: reportsDelivery as its sending half waits for reports`);
  }
  t.same([...REPORTING_CHANNELS], ['whatsapp'], 'WhatsApp reports every message it took (statuses with our outbox id)');
  t.ok(transfersDialogs('helpdesk'), 'the helpdesk moves a handed-off dialog to the operator group');
  t.notOk(transfersDialogs('webchat'), 'webchat has no folder: nothing to transfer');
  t.notOk(transfersDialogs('toString'), 'a name that is no own key of the registry is no channel');
});

t.test('what an integration lacks for sending is its channel’s to say', async (t) => {
  const target: SendTarget = { integrationId: 1, clientId: 'c', channelId: null, transport: null, apiUrl: null, token: 't', phoneNumberId: null };
  t.match(sending.helpdesk.lacks?.(target), /apiUrl/, 'the helpdesk: its apiUrl is the integration’s own');
  t.equal(sending.helpdesk.lacks?.({ ...target, apiUrl: 'https://desk.example/' }), null);
  t.equal(sending.whatsapp.lacks?.(target) ?? null, null, 'WhatsApp: the Graph base is the service’s');
  t.equal(sending.telegram.lacks?.(target) ?? null, null, 'Telegram: the Bot API base is the service’s');
});

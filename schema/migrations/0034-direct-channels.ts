import { Migration } from '@mikro-orm/migrations';

/**
 * Direct channels (contract.md § Direct channels: WhatsApp Cloud API and Telegram):
 * - integrations and conversations of type / channel `whatsapp` and `telegram`; a WhatsApp
 *   integration's `phone_number_id` and the `verify_token` Meta's GET probe must echo;
 * - what the platform reports of our sent messages (`delivery_status`: sent, delivered,
 *   read, failed; never moving back) and the code of a failure (`delivery_error_code`);
 * - `customer_sent_at` of a conversation: the platform's own time of the customer's last
 *   message (WhatsApp's 24-hour window counts from it);
 * - the customer's contact fields may come from a WhatsApp or Telegram message (leads.*_source);
 * - `written_parts` of an outbox row: how many of its parts' requests had left for a channel
 *   that keeps no history to reconcile against (a send found uncertain after a crash goes
 *   on after them, never sending one twice).
 */
export class Migration0034DirectChannels extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table integrations drop constraint if exists integrations_type_check;
      alter table integrations add constraint integrations_type_check check (type in ('helpdesk', 'webchat', 'whatsapp', 'telegram'));
      alter table integrations add column phone_number_id text, add column verify_token text;
      alter table conversations drop constraint if exists conversations_channel_check;
      alter table conversations add constraint conversations_channel_check check (channel in ('helpdesk', 'webchat', 'whatsapp', 'telegram'));
      alter table conversation_messages
        add column delivery_status text check (delivery_status in ('sent', 'delivered', 'read', 'failed')),
        add column delivery_error_code text;
      alter table conversations add column customer_sent_at timestamptz;
      alter table outbox add column written_parts int not null default 0;
    `);
    // What a WhatsApp / Telegram message says of its customer fills an empty contact field, as the helpdesk's does.
    for (const field of ['name', 'email', 'phone']) {
      this.addSql(`
        alter table leads drop constraint if exists leads_${field}_source_check;
        alter table leads add constraint leads_${field}_source_check check (${field}_source in ('operator', 'verified', 'customer', 'helpdesk', 'whatsapp', 'telegram'));
      `);
    }
  }
}

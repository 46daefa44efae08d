import { Migration } from '@mikro-orm/migrations';

/**
 * Customers have names (contract.md § The first hour).
 *
 * - `leads.{name,email,phone}_source`: who gave each contact field, so that a later source
 *   knows whether it may replace it (lib/leads.ts fillLeadContacts): `operator` (PATCH
 *   /api/leads, never replaced), `verified` (the host page's identity, HMAC-checked),
 *   `customer` (typed into the widget's pre-chat form), `helpdesk` (the payload's `client`).
 *   Only an operator's or a verified email fills an action's `{customer.email}`: a customer
 *   could type anyone's address into the form. Fields set before this migration could only
 *   come from PATCH /api/leads, so they count as the operator's.
 * - `leads.verified_id`: the host page's own id of the customer, once its hash verified.
 * - `integrations.prechat_form`: the webchat widget asks for nothing (`off`), the name, or
 *   the name and email before the first message.
 */
export class Migration0031CustomerIdentity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table leads
        add column name_source text check (name_source in ('operator', 'verified', 'customer', 'helpdesk')),
        add column email_source text check (email_source in ('operator', 'verified', 'customer', 'helpdesk')),
        add column phone_source text check (phone_source in ('operator', 'verified', 'customer', 'helpdesk')),
        add column verified_id text;
      update leads set
        name_source = case when name is not null then 'operator' end,
        email_source = case when email is not null then 'operator' end,
        phone_source = case when phone is not null then 'operator' end
      where name is not null or email is not null or phone is not null;

      alter table integrations add column prechat_form text not null default 'off' check (prechat_form in ('off', 'name', 'name_email'));
    `);
  }
}

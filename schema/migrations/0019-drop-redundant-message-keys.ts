import { Migration } from '@mikro-orm/migrations';

/**
 * Three more foreign keys the worker's rows checked on every insert (one index lookup and a
 * key-share lock each, three to four per answered message) without protecting anything:
 * - `conversation_messages.reply_to_id` (on delete set null): a reply and the message it
 *   answers are of one conversation, and messages are only ever deleted with it;
 * - `outbox.message_id` (cascade): the outbox row goes with its conversation as well
 *   (`outbox.conversation_id`, cascade);
 * - `conversation_refs.integration_id` (cascade): a ref goes with its conversation, which goes
 *   with its integration.
 * The columns and their indexes stay (the outbox sender and the transfers read them).
 */
export class Migration0019DropRedundantMessageKeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table conversation_messages drop constraint conversation_messages_reply_to_id_fkey;
      alter table outbox drop constraint outbox_message_id_fkey;
      alter table conversation_refs drop constraint conversation_refs_integration_id_fkey;
    `);
  }
}

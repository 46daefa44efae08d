import { Migration } from '@mikro-orm/migrations';

/**
 * Answers that find what the help centre says (contract.md): an agent's `clarify` reply ("Do
 * you mean: 1. Returns 2. Exchanges?") keeps its numbered options with the message
 * (`[{documentId, chunkId, title}]`, in the order offered), for the webchat's `message` frame
 * (replayed on `hello` too) and the conversation API. Null for every other message.
 */
export class Migration0029ClarifyOptions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table conversation_messages add column options jsonb;`);
  }
}

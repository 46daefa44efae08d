import { Migration0001Foundation } from './0001-foundation.js';
import { Migration0002Integrations } from './0002-integrations.js';
import { Migration0003Knowledge } from './0003-knowledge.js';
import { Migration0004Conversations } from './0004-conversations.js';
import { Migration0005AgentHandoff } from './0005-agent-handoff.js';
import { Migration0006OutboxClaimIndex } from './0006-outbox-claim-index.js';
import { Migration0007DropRedundantCompanyKeys } from './0007-drop-redundant-company-keys.js';

/** Applied in order at start; never edit a migration that has shipped, add a new one. */
export const migrations = [
  { name: '0001-foundation', class: Migration0001Foundation },
  { name: '0002-integrations', class: Migration0002Integrations },
  { name: '0003-knowledge', class: Migration0003Knowledge },
  { name: '0004-conversations', class: Migration0004Conversations },
  { name: '0005-agent-handoff', class: Migration0005AgentHandoff },
  { name: '0006-outbox-claim-index', class: Migration0006OutboxClaimIndex },
  { name: '0007-drop-redundant-company-keys', class: Migration0007DropRedundantCompanyKeys },
];

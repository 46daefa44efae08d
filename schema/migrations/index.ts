import { Migration0001Foundation } from './0001-foundation.js';
import { Migration0002Integrations } from './0002-integrations.js';
import { Migration0003Knowledge } from './0003-knowledge.js';
import { Migration0004Conversations } from './0004-conversations.js';
import { Migration0005AgentHandoff } from './0005-agent-handoff.js';
import { Migration0006OutboxClaimIndex } from './0006-outbox-claim-index.js';
import { Migration0007DropRedundantCompanyKeys } from './0007-drop-redundant-company-keys.js';
import { Migration0008Hardening } from './0008-hardening.js';
import { Migration0009LoginFailures } from './0009-login-failures.js';
import { Migration0010KnowledgeChunks } from './0010-knowledge-chunks.js';
import { Migration0011ExactlyOnceDelivery } from './0011-exactly-once-delivery.js';
import { Migration0012WebhookActivity } from './0012-webhook-activity.js';
import { Migration0013ModelCalls } from './0013-model-calls.js';
import { Migration0014Leads } from './0014-leads.js';
import { Migration0015AgentBehaviour } from './0015-agent-behaviour.js';
import { Migration0016KnowledgeSynonyms } from './0016-knowledge-synonyms.js';
import { Migration0017SynonymEntries } from './0017-synonym-entries.js';
import { Migration0018AnswerDecisions } from './0018-answer-decisions.js';
import { Migration0019DropRedundantMessageKeys } from './0019-drop-redundant-message-keys.js';
import { Migration0020ConversationChildrenCascade } from './0020-conversation-children-cascade.js';
import { Migration0021Team } from './0021-team.js';
import { Migration0022AgentActions } from './0022-agent-actions.js';

/** Applied in order at start; never edit a migration that has shipped, add a new one. */
export const migrations = [
  { name: '0001-foundation', class: Migration0001Foundation },
  { name: '0002-integrations', class: Migration0002Integrations },
  { name: '0003-knowledge', class: Migration0003Knowledge },
  { name: '0004-conversations', class: Migration0004Conversations },
  { name: '0005-agent-handoff', class: Migration0005AgentHandoff },
  { name: '0006-outbox-claim-index', class: Migration0006OutboxClaimIndex },
  { name: '0007-drop-redundant-company-keys', class: Migration0007DropRedundantCompanyKeys },
  { name: '0008-hardening', class: Migration0008Hardening },
  { name: '0009-login-failures', class: Migration0009LoginFailures },
  { name: '0010-knowledge-chunks', class: Migration0010KnowledgeChunks },
  { name: '0011-exactly-once-delivery', class: Migration0011ExactlyOnceDelivery },
  { name: '0012-webhook-activity', class: Migration0012WebhookActivity },
  { name: '0013-model-calls', class: Migration0013ModelCalls },
  { name: '0014-leads', class: Migration0014Leads },
  { name: '0015-agent-behaviour', class: Migration0015AgentBehaviour },
  { name: '0016-knowledge-synonyms', class: Migration0016KnowledgeSynonyms },
  { name: '0017-synonym-entries', class: Migration0017SynonymEntries },
  { name: '0018-answer-decisions', class: Migration0018AnswerDecisions },
  { name: '0019-drop-redundant-message-keys', class: Migration0019DropRedundantMessageKeys },
  { name: '0020-conversation-children-cascade', class: Migration0020ConversationChildrenCascade },
  { name: '0021-team', class: Migration0021Team },
  { name: '0022-agent-actions', class: Migration0022AgentActions },
];

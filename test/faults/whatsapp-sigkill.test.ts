import t from 'tap';
import { setupChannelBacklog, sigkillTest } from './channel-backlog.js';

/**
 * contract.md § Delivery and § Direct channels ("exactly-once replies … as the helpdesk"),
 * measured as the issue asks for the WhatsApp Cloud API channel: 1,000 messages from 100 chats (100
 * customers × 10 messages, in rounds), the platform's sandbox answering in 100–300 ms, the
 * only worker process SIGKILLed while at least 40 sends are in flight at the sandbox, once 200
 * replies have gone out (the backlog in full flow, as the helpdesk test kills in its second
 * round): 0–50 ms after the sandbox first holds 40, a moment the worker does not choose, a second worker started right after. Graph keeps no history we can read: an uncertain row
 * goes on after the parts whose requests had left (outbox.written_parts). Counted at the
 * sandbox after any claim of the killed worker could have expired: every customer message
 * answered (0 lost), no reply delivered twice (0 doubled), each chat's replies in the order
 * of its messages.
 */
sigkillTest(t, await setupChannelBacklog(t, 'whatsapp_sigkill', 'whatsapp', { customers: 100, perCustomer: 10, partitions: 4 }));

// How far one of our sent messages got: the channel's deliveryStatus (WhatsApp, Telegram:
// ✓ sent, ✓✓ delivered, ✓✓ read, failed), else the outbox's state (Sending…, Sent, Not
// delivered), and why a failed one was not delivered ("Not delivered: <message> (<code>)").
import { h } from '../dom.js';
import { deliveryText } from '../words.js';

const DELIVERY_MARKS = {
  sent: ['✓', 'Sent'],
  delivered: ['✓✓', 'Delivered'],
  read: ['✓✓', 'Read'],
  failed: ['!', 'Not delivered'],
};

/** The small status of a sent message, or null for messages that were not sent by us. */
export function deliveryMark(m) {
  const mark = m.deliveryStatus ? DELIVERY_MARKS[m.deliveryStatus] : null;
  if (mark) {
    return h(
      'span',
      { class: ['msg-delivery', `delivery-${m.deliveryStatus}`], dataset: { deliveryStatus: m.deliveryStatus }, title: mark[1] },
      h('span', { class: 'delivery-ticks', 'aria-hidden': 'true' }, `${mark[0]} `),
      mark[1],
    );
  }
  const text = deliveryText(m.delivery);
  return text ? h('span', { class: 'msg-delivery', dataset: { delivery: m.delivery } }, text) : null;
}

/** Why a failed message was not delivered (deliveryError {code, message}; an older answer's plain text too), or null. */
export function deliveryFailure(m) {
  if (m.deliveryStatus !== 'failed' && m.delivery !== 'failed') return null;
  const e = m.deliveryError;
  if (!e) return m.deliveryStatus === 'failed' ? 'Not delivered.' : null;
  if (typeof e === 'string') return `Not delivered: ${e}`;
  const message = typeof e.message === 'string' && e.message ? e.message : 'the channel refused it';
  return `Not delivered: ${message}${e.code ? ` (${e.code})` : ''}`;
}

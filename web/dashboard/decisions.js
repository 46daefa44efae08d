// What the agent decided for a customer message (the `decision` the transition log records with
// its answer: schema/conversation.ts AnswerDecision), in the words a support lead reads:
// "answered from Returns, 82 %", "asked which one: Returns / Exchanges", "out of scope",
// "no answer (best: Returns, 21 %)". Titles come from the company's documents: they reach the
// page as text nodes and attributes only (dom.js), never as markup.
import { h } from './dom.js';
import { humanise } from './words.js';

const percent = (confidence) => (typeof confidence === 'number' && Number.isFinite(confidence) ? `${Math.round(confidence * 100)} %` : null);

/** "Returns, 82 %" (a passage without a title: its document). */
function passageText(passage) {
  const title = String(passage?.title || (passage?.documentId != null ? `document ${passage.documentId}` : 'a passage'));
  const sure = percent(passage?.confidence);
  return sure ? `${title}, ${sure}` : title;
}

/** The titles of a clarify reply's options, in the order offered: the API gives them as titles or as {title} (schema/conversation.ts ClarifyOption). */
export function optionTitles(options) {
  if (!Array.isArray(options)) return [];
  return options.map((o) => (typeof o === 'string' ? o : String(o?.title ?? ''))).filter((title) => title !== '');
}

const KIND_TEXT = { greeting: 'greeting', thanks: 'thanks', out_of_scope: 'out of scope', asked_for_human: 'asked for a person' };

/** A decision in words; null when there is none (older answers, handoffs for want of credit). */
export function decisionText(decision) {
  if (!decision || typeof decision !== 'object' || typeof decision.kind !== 'string') return null;
  let text;
  if (decision.kind === 'answer') text = decision.best ? `answered from ${passageText(decision.best)}` : 'answered';
  else if (decision.kind === 'clarify') {
    const titles = optionTitles(decision.options);
    text = titles.length ? `asked which one: ${titles.join(' / ')}` : 'asked which one';
  } else if (decision.kind === 'no_answer') text = decision.best ? `no answer (best: ${passageText(decision.best)})` : 'no answer';
  else text = KIND_TEXT[decision.kind] ?? humanise(decision.kind).toLowerCase();
  // The agent had handed the conversation over: it answered while the customer waited for a person.
  return decision.handedOver ? `${text} (while waiting for a person)` : text;
}

/** The decision as a line of the log, the passages it weighed on hover ("Returns 82 % · Exchanges 40 %"). */
export function decisionNote(decision) {
  const text = decisionText(decision);
  if (!text) return null;
  const weighed = Array.isArray(decision.passages) && decision.passages.length ? `Passages weighed: ${decision.passages.map(passageText).join(' · ')}` : null;
  return h('p', { class: ['decision', `decision-${String(decision.kind).replace(/[^a-z_]/g, '')}`], title: weighed }, h('span', { class: 'muted' }, 'Decision: '), text);
}

/** The numbered options a clarify reply offered the customer, as the customer saw them. */
export function offeredOptions(options) {
  const titles = optionTitles(options);
  if (!titles.length) return null;
  return h('ol', { class: 'msg-options', 'aria-label': 'Options offered' }, titles.map((title) => h('li', {}, title)));
}

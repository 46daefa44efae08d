// How sure the agent was that a passage answers the customer's question (0–1 from the API),
// shown to a support lead as a percentage with a colour: shared by the conversation view and
// the Test agent page so the same figure reads the same everywhere.
import { h } from './dom.js';

/** At or above: green (the passage clearly answers). Below LOW: red (check this answer). */
const HIGH = 0.75;
const LOW = 0.5;

export const CONFIDENCE_HINT = 'How sure the agent is that its source answers the question.';

/** "confidence 82 %", or null when there is no confidence to show. */
export function confidenceText(value) {
  return typeof value === 'number' && Number.isFinite(value) ? `confidence ${Math.round(value * 100)} %` : null;
}

export function confidenceLevel(value) {
  return value >= HIGH ? 'high' : value >= LOW ? 'medium' : 'low';
}

/** A badge for a confidence (nothing for null: replies that were not answered from the knowledge). */
export function confidenceBadge(value) {
  const text = confidenceText(value);
  if (!text) return null;
  const level = confidenceLevel(value);
  return h('span', { class: ['confidence', `confidence-${level}`], title: `${CONFIDENCE_HINT} (${level})` }, text);
}

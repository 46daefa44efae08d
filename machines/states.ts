// Where a stored conversation machine is, read from its state value alone (pure: the host,
// the gateway and SQL-free checks use these, so the state names are spelt in one place).
import type { StateValue } from 'xstate';

/**
 * The states in which the agent takes customer messages: `active` (the bot has the
 * conversation), and `paused.handedOver` (it handed the conversation to a person and nobody
 * has acted yet: it still answers what it can). Each has `idle`, `collecting` and `answering`.
 */
function agentStateOf(state: StateValue): string | null {
  if (typeof state !== 'object' || state === null) return null;
  const active = (state as Record<string, unknown>).active;
  if (typeof active === 'string') return active;
  const paused = (state as Record<string, unknown>).paused;
  if (typeof paused !== 'object' || paused === null) return null;
  const handedOver = (paused as Record<string, unknown>).handedOver;
  return typeof handedOver === 'string' ? handedOver : null;
}

/** The agent is working out an answer (the machine invokes it). */
export const isAnswering = (state: StateValue): boolean => agentStateOf(state) === 'answering';

/** Waiting out the agent's debounce window (answerDueAt in the context). */
export const isCollecting = (state: StateValue): boolean => agentStateOf(state) === 'collecting';

/**
 * The agent handed the conversation over and no person has acted yet (`paused.handedOver`):
 * the customer waits for a person, and the agent still answers what it can meanwhile.
 */
export const isHandedOver = (state: StateValue): boolean => {
  if (typeof state !== 'object' || state === null) return false;
  const paused = (state as Record<string, unknown>).paused;
  return typeof paused === 'object' && paused !== null && 'handedOver' in paused;
};

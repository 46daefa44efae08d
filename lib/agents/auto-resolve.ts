/**
 * Auto-resolve (contract.md § The first hour): a conversation whose last message is the
 * agent's answer and whose customer stays silent for the agent's `autoResolveMinutes` closes
 * as resolved by the agent (actors/auto-resolve.ts closes it through its machine), so
 * Outcomes counts what the agent resolved; a later message opens a new session.
 */

/** A day: a customer who has not written back by then is taken to have had their answer. */
export const DEFAULT_AUTO_RESOLVE_MINUTES = 1440;
/** Thirty days: longer is "never" in practice, which 0 says plainly. */
export const MAX_AUTO_RESOLVE_MINUTES = 43_200;

export const AUTO_RESOLVE_HINT =
  `How long (minutes) a customer may stay silent after the agent's answer before the conversation closes as resolved by the agent ` +
  `(0: never; 1–${MAX_AUTO_RESOLVE_MINUTES}, default ${DEFAULT_AUTO_RESOLVE_MINUTES}: a day). Only conversations the agent answered last and nobody handed over; ` +
  'a later message from the customer opens a new conversation. Not part of the agent\'s versions (it decides when a conversation ends, not what the agent says).';

/**
 * Shapes of the question sets of the trust benchmark (issue #27): does the agent answer only
 * when its help centre answers the question? The sets themselves are data only:
 * trust-held-out.ts (never used for tuning) and trust-dev.ts (the development set).
 */

/** A message that neither help centre of the base can answer, so the agent must not answer it. */
export interface UnanswerableQuestion {
  question: string;
  /** Which help centre it is asked of: Northwind Coffee (help-centre.ts) or Volna (telecom.ts). */
  base: 'northwind' | 'volna';
  /**
   * `unrelated`: nothing to do with the business (general knowledge, news, sport, maths, code,
   * poems and jokes, other companies, chit-chat). `near_miss`: the business's own world, but a
   * product, service or policy that no section of the help centre covers.
   */
  kind: 'unrelated' | 'near_miss';
  language: 'en' | 'ru';
}

/** A message that is only a greeting, or only thanks / goodbye / acknowledgement. */
export interface SmallTalkMessage {
  message: string;
  kind: 'greeting' | 'thanks';
  /** ISO 639-1 code. */
  language: string;
}

/** A real question the help centre answers, wrapped in a greeting or politeness. */
export interface LabelledTrustQuestion {
  question: string;
  base: 'northwind' | 'volna';
  /** `documentKey/sectionKey` of the section that answers it, in the base's documents. */
  answer: string;
}

import type { ModelPricing } from '../../schema/entities.js';

/**
 * USD per million tokens for models we know. A model that is not listed (a self-hosted
 * Ollama / vLLM / llama.cpp model, say) costs nothing unless the agent sets
 * `model.pricing`, which always wins.
 */
export const DEFAULT_MODEL_PRICING: Readonly<Record<string, ModelPricing>> = Object.freeze({
  'gpt-4o': { inputUsdPerMTok: '2.50', outputUsdPerMTok: '10.00' },
  'gpt-4o-mini': { inputUsdPerMTok: '0.15', outputUsdPerMTok: '0.60' },
  'gpt-4.1': { inputUsdPerMTok: '2.00', outputUsdPerMTok: '8.00' },
  'gpt-4.1-mini': { inputUsdPerMTok: '0.40', outputUsdPerMTok: '1.60' },
  'gpt-4.1-nano': { inputUsdPerMTok: '0.10', outputUsdPerMTok: '0.40' },
  'gpt-5': { inputUsdPerMTok: '1.25', outputUsdPerMTok: '10.00' },
  'gpt-5-mini': { inputUsdPerMTok: '0.25', outputUsdPerMTok: '2.00' },
  'gpt-5-nano': { inputUsdPerMTok: '0.05', outputUsdPerMTok: '0.40' },
});

export const FREE: ModelPricing = Object.freeze({ inputUsdPerMTok: '0', outputUsdPerMTok: '0' });

/** A dated snapshot name ("gpt-4o-2024-08-06") is priced like its model ("gpt-4o"). */
const DATED_SNAPSHOT = /-\d{4}-\d{2}-\d{2}$/;

/** The agent's override, else the table's price for the model (or its dated snapshot), else free. */
export function pricingFor(model: string, override: ModelPricing | null | undefined): ModelPricing {
  if (override) return override;
  const own = Object.hasOwn(DEFAULT_MODEL_PRICING, model) ? DEFAULT_MODEL_PRICING[model] : undefined;
  if (own) return own;
  const base = model.replace(DATED_SNAPSHOT, '');
  return (base !== model && Object.hasOwn(DEFAULT_MODEL_PRICING, base) ? DEFAULT_MODEL_PRICING[base] : undefined) ?? FREE;
}

/** Fixed-point scale for prices: 9 decimals, the most the agent schema accepts. */
const PRICE_SCALE = 9;
/** The ledger keeps 6 decimals (numeric(18,6)). */
const LEDGER_SCALE = 6;

function toScaled(decimal: string, scale: number): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(decimal.trim());
  if (!m) throw new Error(`not a non-negative decimal: ${decimal}`);
  const frac = (m[2] ?? '').padEnd(scale, '0');
  if (frac.length > scale) throw new Error(`more than ${scale} decimals: ${decimal}`);
  return BigInt(m[1]!) * 10n ** BigInt(scale) + BigInt(frac || '0');
}

function fromScaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const s = abs.toString().padStart(scale + 1, '0');
  return `${negative ? '-' : ''}${s.slice(0, -scale)}.${s.slice(-scale)}`;
}

/**
 * The exact cost of one call, in USD with 6 decimals, rounded half up to the micro-dollar:
 * (inputTokens × input price + outputTokens × output price) / 1,000,000. No floating point.
 */
export function costUsd(inputTokens: number, outputTokens: number, pricing: ModelPricing): string {
  if (!Number.isSafeInteger(inputTokens) || !Number.isSafeInteger(outputTokens) || inputTokens < 0 || outputTokens < 0) {
    throw new Error('token counts must be non-negative integers');
  }
  const total =
    BigInt(inputTokens) * toScaled(pricing.inputUsdPerMTok, PRICE_SCALE) + BigInt(outputTokens) * toScaled(pricing.outputUsdPerMTok, PRICE_SCALE);
  // total is USD × 10^9 × 10^6 (per-million); bring it to USD × 10^6.
  const divisor = 10n ** BigInt(PRICE_SCALE + 6 - LEDGER_SCALE);
  const rounded = (total + divisor / 2n) / divisor;
  return fromScaled(rounded, LEDGER_SCALE);
}

/** Output tokens a call's reservation counts on: the answer's length is not known before it comes. */
export const RESERVED_OUTPUT_TOKENS = 1024;
/**
 * The prompt is counted at 3 characters a token for a reservation (estimateTokens counts 4,
 * which falls short for Cyrillic and other scripts), plus the request's framing: the roles of
 * each message and the handoff tool's definition.
 */
const RESERVED_CHARS_PER_TOKEN = 3;
const RESERVED_TOKENS_PER_MESSAGE = 4;
const RESERVED_FRAMING_TOKENS = 150;

/** Tokens a reservation counts for a prompt. */
export function reservedInputTokens(messages: { content: string }[]): number {
  return messages.reduce((n, m) => n + Math.ceil(m.content.length / RESERVED_CHARS_PER_TOKEN) + RESERVED_TOKENS_PER_MESSAGE, RESERVED_FRAMING_TOKENS);
}

/** What a call with this prompt is expected to cost at most, in USD (the credit it reserves before it runs). */
export function reservationUsd(messages: { content: string }[], pricing: ModelPricing): string {
  return costUsd(reservedInputTokens(messages), RESERVED_OUTPUT_TOKENS, pricing);
}

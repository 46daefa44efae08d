/** Small numeric helpers: percentiles, medians, rates, formatting. */

/** Nearest-rank percentile of unsorted values (p in [0, 100]); NaN for none. */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Median (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

export function mean(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i]!;
  return values.length ? s / values.length : NaN;
}

/** Summary of latencies in ms. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarise(values: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(values).sort();
  const at = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : NaN);
  return { count: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted.length ? sorted[sorted.length - 1]! : NaN, mean: mean(sorted) };
}

/**
 * Rate over the middle of a series of completion times (ms, any origin): the count between
 * the `lo` and `hi` fractions divided by the time between them. Leaves out start-up and the
 * tail (where a few long conversations finish alone).
 */
export function steadyRate(times: ArrayLike<number>, lo = 0.1, hi = 0.9): number {
  const sorted = Float64Array.from(times).sort();
  if (sorted.length < 10) return NaN;
  const a = Math.floor(sorted.length * lo);
  const b = Math.min(sorted.length - 1, Math.floor(sorted.length * hi));
  const span = sorted[b]! - sorted[a]!;
  return span > 0 ? ((b - a) / span) * 1000 : NaN;
}

export const round = (n: number, digits = 0): number => (Number.isFinite(n) ? Number(n.toFixed(digits)) : NaN);

export function fmt(n: number | null | undefined, digits = 0): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const mib = (bytes: number): number => bytes / (1024 * 1024);

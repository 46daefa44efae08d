import type { Section } from './args.js';
import { fmt } from './stats.js';
import type { Row } from '../sections/types.js';

interface KeyFigure {
  name: string;
  /** Read from the section's data; undefined when the section did not measure it. */
  read: (data: Record<string, unknown>) => number | undefined;
  higherIsBetter: boolean;
}

const at = (data: Record<string, unknown>, path: string): number | undefined => {
  let v: unknown = data;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const figure = (name: string, path: string, higherIsBetter: boolean): KeyFigure => ({ name, read: (d) => at(d, path), higherIsBetter });

/**
 * `--baseline DIR`: the sections measured twice in one run, first with another checkout's
 * roles, then with this one's, and the figures whose ratio says whether a change made the
 * message path faster or slower.
 */
const KEY_FIGURES: Partial<Record<Section, KeyFigure[]>> = {
  drain: [figure('answered msg/s', 'rate', true), figure('answered msg/s, steady', 'steadyRate', true), figure('worker CPU ms per message', 'workerCpuMsPerMessage', false)],
  latency: [figure('webhook → reply p99 (ms)', 'replyMs.p99', false), figure('webhook → reply p50 (ms)', 'replyMs.p50', false)],
  scaleout: [figure('2 workers: msg/s', 'twoWorkers.rate', true), figure('speed-up of 2 workers', 'speedup', true)],
  models: [
    figure('answered msg/s at model latency', 'real.rate', true),
    figure("another company's slowest reply (ms)", 'real.other.max', false),
    figure('worker CPU ms per answered message', 'real.workerCpuMsPerMessage', false),
  ],
  webchat: [figure('crowd asks: send → reply p99 (ms)', 'ask.p99Ms', false), figure('crowd asks: replies/s', 'ask.rate', true), figure('gateway KiB per socket', 'gateway.kibPerSocket', false)],
  actions: [
    figure('answers/s with an action call', 'called.rate', true),
    figure('publish → reply p99 with an action call (ms)', 'called.replyMs.p99', false),
    figure('worker CPU ms per answer with an action call', 'called.workerCpuMsPerMessage', false),
  ],
};

/** The sections `--baseline` runs twice: those with key figures (a set: they run in the order of `args.sections`). */
export const COMPARED: readonly Section[] = Object.keys(KEY_FIGURES) as Section[];

/** One row per key figure: baseline → this, and the ratio this / baseline. */
export function comparisonRows(section: Section, before: Record<string, unknown>, after: Record<string, unknown>): Row[] {
  return (KEY_FIGURES[section] ?? []).map((f) => {
    const b = f.read(before);
    const a = f.read(after);
    const ratio = a !== undefined && b !== undefined && b !== 0 ? a / b : undefined;
    const better = ratio === undefined ? undefined : f.higherIsBetter ? ratio >= 1 : ratio <= 1;
    return {
      section,
      metric: `vs baseline: ${f.name}`,
      value: `${b === undefined ? '–' : fmt(b, 2)} → ${a === undefined ? '–' : fmt(a, 2)} (${ratio === undefined ? '–' : `${ratio.toFixed(2)}×`})`,
      target: f.higherIsBetter ? 'ratio ≥ 1' : 'ratio ≤ 1',
      ok: better,
    };
  });
}

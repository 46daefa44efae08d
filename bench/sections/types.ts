import type { NatsConnection } from '../../lib/nats.js';
import type { BenchArgs } from '../lib/args.js';
import type { StandIn } from '../lib/stand-in.js';

export interface BenchContext {
  args: BenchArgs;
  standIn: StandIn;
  nc: NatsConnection;
}

/** One line of the printed table. */
export interface Row {
  section: string;
  metric: string;
  value: string;
  /** The target, as text (empty when the figure has none). */
  target?: string;
  /** Whether the target is met (undefined: no target). */
  ok?: boolean;
}

export interface SectionResult {
  rows: Row[];
  /** Everything measured, for bench/results/latest.json. */
  data: Record<string, unknown>;
}

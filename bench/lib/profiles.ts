import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatSummary, summariseProfile, type ProfileSummary } from '../profile-summary.js';
import { profilesIn, RESULTS_DIR, type Child } from './children.js';

/** Monotonic µs on the clock V8's CPU profiles use (process.hrtime). */
export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface Window {
  fromUs: number;
  toUs: number;
}

/**
 * After a profiled child exited: summarises its profile over the measured window(s), writes
 * the text to bench/results/profiles/<label>.txt and returns the summary (null when the child
 * was not profiled or wrote nothing).
 */
export async function collectProfile(child: Child, window: Window | null, top: number): Promise<(ProfileSummary & { text: string }) | null> {
  if (!child.profileDir) return null;
  const files = await profilesIn(child.profileDir);
  if (files.length === 0) return null;
  // `--import tsx` runs its loader hooks on a second thread, which writes its own profile:
  // keep the busiest one (the main thread; the loader thread idles after start-up).
  const summary = files
    .map((f) => summariseProfile(f, { top, fromUs: window?.fromUs, toUs: window?.toUs }))
    .sort((a, b) => b.busyMs - a.busyMs)[0]!;
  const text = formatSummary(summary, `${child.label} (${window ? 'measured window only' : 'whole run'})`);
  const dir = join(RESULTS_DIR, 'profiles');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${child.label}.txt`), `${text}\n`);
  return { ...summary, text };
}

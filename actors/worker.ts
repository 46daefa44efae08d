import type { Runtime } from '../lib/runtime.js';

export interface RunningWorker {
  close: () => Promise<void>;
}

/**
 * The worker role: hosts the conversation actors. The conversation engine (issue #4) fills
 * this in; until then the role starts, reports that it holds no partitions, and stops cleanly.
 */
export async function startWorker(rt: Pick<Runtime, 'logger'>): Promise<RunningWorker> {
  rt.logger.info({ partitions: 0 }, 'worker started (conversation engine not installed yet)');
  return { close: async () => {} };
}

import { startRuntime } from '../lib/runtime.js';
import { startWorker } from './worker.js';

/** `npm run worker`: the conversation-actor role alone; run several to scale out. */
const rt = await startRuntime('worker');
const worker = await startWorker(rt);
rt.onShutdown(() => worker.close());

import { startRuntime } from './lib/runtime.js';
import { startGateway } from './gateway/server.js';
import { startWorker } from './actors/worker.js';

/** `npm start`: everything in one process (gateway + worker), for a single machine. */
const rt = await startRuntime('all-in-one');
const worker = await startWorker(rt);
rt.onShutdown(() => worker.close());
const gateway = await startGateway(rt, { port: rt.config.port, host: rt.config.host });
rt.onShutdown(() => gateway.close());
rt.logger.info({ url: gateway.url }, 'listening');

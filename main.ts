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
// The line a person starting it looks for (the one above stays as it was for tools that wait for it).
rt.logger.info(`dashboard: open ${gateway.dashboardUrl} in a browser`);

import { startMetricsServer } from '../lib/metrics-server.js';
import { startRuntime } from '../lib/runtime.js';
import { startWorker } from './worker.js';

/** `npm run worker`: the conversation-actor role alone; run several to scale out. */
const rt = await startRuntime('worker');
const worker = await startWorker(rt);
rt.onShutdown(() => worker.close());
if (rt.config.metricsPort !== undefined) {
  const metrics = await startMetricsServer({ registry: rt.registry, token: rt.config.metricsToken, logger: rt.logger }, { port: rt.config.metricsPort, host: rt.config.host });
  rt.onShutdown(() => metrics.close());
  rt.logger.info({ url: `${metrics.url}/metrics` }, 'worker metrics listening');
}

import { startRuntime } from '../lib/runtime.js';
import { startGateway } from './server.js';

/** `npm run gateway`: the HTTP API, webhook ingress and WebSocket role alone. */
const rt = await startRuntime('gateway');
const gateway = await startGateway(rt, { port: rt.config.port, host: rt.config.host });
rt.onShutdown(() => gateway.close());
rt.logger.info({ url: gateway.url }, 'gateway listening');
// The line a person starting it looks for (the one above stays as it was for tools that wait for it).
rt.logger.info(`dashboard: open ${gateway.dashboardUrl} in a browser`);

import { startRuntime } from '../../lib/runtime.js';

/**
 * A process that starts the shared runtime (as every entry point does) and then fails the
 * way the environment asks (RUNTIME_CHILD_FAULT): an exception nothing catches, a rejection
 * nobody handles, or a SIGTERM whose shutdown step never finishes. Used by
 * test/lib/runtime.test.ts.
 */
const rt = await startRuntime('runtime-child');
const fault = process.env.RUNTIME_CHILD_FAULT;
rt.onShutdown(async () => {
  process.stdout.write('shutdown step started\n');
  if (fault === 'hang') await new Promise(() => {});
  process.stdout.write('shutdown step done\n');
});
process.stdout.write('ready\n');
if (fault === 'throw') {
  setTimeout(() => {
    throw new Error('an error nothing caught');
  }, 20);
} else if (fault === 'reject') {
  setTimeout(() => void Promise.reject(new Error('a rejection nobody handled')), 20);
}
setInterval(() => {}, 1000);

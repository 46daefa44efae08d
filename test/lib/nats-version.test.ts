import t from 'tap';
import { isUnsafeNatsServer } from '../../lib/nats.js';

/** Which nats-server versions the service warns about at start (lib/nats.ts): those that lose acknowledged messages. */
t.test('servers older than 2.10.23 are flagged, newer ones are not', async (t) => {
  for (const v of ['2.9.10', '2.9.25', '2.10.0', '2.10.20', '2.10.22', '1.4.1']) t.ok(isUnsafeNatsServer(v), `${v} is flagged`);
  for (const v of ['2.10.23', '2.10.27', '2.10.29', '2.11.0', '2.12.1', '3.0.0', '2.10.27-RC.1']) t.notOk(isUnsafeNatsServer(v), `${v} is not`);
});

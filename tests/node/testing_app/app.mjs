// An application module as a user writes it, for tests/node/testing.test.mjs: its Queue is built
// at import, with no URL (TIDEQ_REDIS_URL, else a local Redis), and nothing in it knows about
// tests. The same module is run inline, fake-drained and by a real worker on a private
// redis-server.
import { DontRetry, Queue, defineTasks } from 'tideq';

export const orders = new Queue('orders-app');

export const tasks = defineTasks({
  // Completes with a result.
  total: async (args) => ({ total: args.items.reduce((sum, n) => sum + n, 0) }),
  // Fails twice, then completes (the job's own attempt count decides, as in any worker).
  flaky: async (args, job) => {
    if (job.attempt < 3) throw new Error(`gateway timeout (attempt ${job.attempt})`);
    return `charged ${args.cents}`;
  },
  // Fails every time: dead after its attempts, with the last error.
  doomed: async () => {
    throw new TypeError('card number is not valid');
  },
  // Refuses at once: dead after one attempt, whatever attempts it has left.
  refused: async (args) => {
    throw new DontRetry(`country ${args.country} is not served`);
  },
  // Enqueues another job (a drain runs it too).
  checkout: async (args) => {
    const next = await orders.enqueueTask('total', { items: args.items });
    return { next: next.id };
  },
});

/** The scenario: one job of each kind; resolves with their ids by task name. */
export async function placeOrders() {
  const backoff = { type: 'fixed', delayMs: 10 };
  const ids = {};
  ids.total = (await orders.enqueueTask('total', { items: [1, 2, 3] })).id;
  ids.flaky = (await orders.enqueueTask('flaky', { cents: 1200 }, { maxAttempts: 5, backoff })).id;
  ids.doomed = (await orders.enqueueTask('doomed', {}, { maxAttempts: 2, backoff })).id;
  ids.refused = (await orders.enqueueTask('refused', { country: 'AQ' }, { maxAttempts: 5, backoff })).id;
  return ids;
}

// tideq/express: the dashboard as Express middleware, in the example app (examples/express/app.mjs)
// run as its own process against a real redis-server: the app's login decides read and act, the
// Host and cross-site guards refuse, the page's links carry the prefix.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { tideq, unique, useRedis } from './harness.mjs';
import { checkMounted, http, post, startExample } from './mounted.mjs';

const redis = useRedis();
const apps = [];
after(async () => {
  for (const app of apps) await app.stop();
});

test('the Express example: the app login decides who reads and who acts, the guards refuse, links carry the prefix', async () => {
  // The example's client uses the default key prefix.
  const queue = new tideq.Queue(unique('jq'), { client: new tideq.Client({ url: redis.url }) });
  await queue.enqueue(Buffer.from('x'));
  const app = await startExample('express/app.mjs', { TIDEQ_REDIS_URL: redis.url });
  apps.push(app);
  await checkMounted(app, queue);
  assert.equal(await app.stop(), 0, 'it stops on SIGTERM');
});

test('tideq/express refuses a missing authorize and bad options', async () => {
  const { dashboard } = await import('tideq/express');
  assert.throws(() => dashboard({ url: redis.url }), TypeError);
  assert.throws(
    () => dashboard({ url: redis.url, authorize: () => true, allowedHosts: ['http://x.example'] }),
    (err) => err.code === 'INVALID_ARGUMENT' && /allowed_hosts/.test(err.message),
  );
  assert.throws(() => dashboard({ url: redis.url, authorize: () => true, nope: 1 }), /nope/);
});

test('tideq/express: a failing authorize fails the request (500) and lets nothing through', async () => {
  const { default: express } = await import('express');
  const { dashboard } = await import('tideq/express');
  const queue = new tideq.Queue(unique('jq'), { client: new tideq.Client({ url: redis.url }) });
  await queue.enqueue(Buffer.from('x'));
  const app = express();
  app.use('/tideq', dashboard({ url: redis.url, authorize: async () => { throw new Error('the session store is down'); } }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address();
    assert.equal((await post(port, `/tideq/api/queues/${queue.name}/pause`)).status, 500);
    assert.equal((await http(port, 'GET', '/tideq/api/overview')).status, 500);
    assert.equal((await queue.stats()).paused, false);
  } finally {
    server.close();
    server.closeAllConnections();
  }
});

// tideq/fastify: the dashboard as a Fastify plugin, in the example app (examples/fastify/app.mjs)
// run as its own process against a real redis-server: the app's login decides read and act, the
// Host and cross-site guards refuse, the page's links carry the prefix.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { tideq, unique, useRedis } from './harness.mjs';
import { checkMounted, startExample } from './mounted.mjs';

const redis = useRedis();
const apps = [];
after(async () => {
  for (const app of apps) await app.stop();
});

test('the Fastify example: the app login decides who reads and who acts, the guards refuse, links carry the prefix', async () => {
  // The example's client uses the default key prefix.
  const queue = new tideq.Queue(unique('jq'), { client: new tideq.Client({ url: redis.url }) });
  await queue.enqueue(Buffer.from('x'));
  const app = await startExample('fastify/app.mjs', { TIDEQ_REDIS_URL: redis.url });
  apps.push(app);
  await checkMounted(app, queue);
  assert.equal(await app.stop(), 0, 'it stops on SIGTERM');
});

test('tideq/fastify: an async authorize decides, and registering without one fails', async () => {
  const { default: Fastify } = await import('fastify');
  const { dashboard } = await import('tideq/fastify');
  const queue = new tideq.Queue(unique('jq'), { client: new tideq.Client({ url: redis.url }) });
  const asked = [];
  const app = Fastify();
  await app.register(dashboard, {
    prefix: '/admin/tideq',
    url: redis.url,
    queues: [queue.name],
    authorize: async (request, action) => {
      asked.push(action);
      return request.headers['x-user'] === 'eve' && action === 'read';
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const base = `http://127.0.0.1:${app.server.address().port}/admin/tideq`;
    const o = await (await fetch(`${base}/api/overview`, { headers: { 'X-User': 'eve' } })).json();
    assert.deepEqual(o.queues.map((q) => q.name), [queue.name]);
    assert.equal(o.read_only, true);
    assert.deepEqual(asked, ['read', 'act'], 'the overview asks whether to show actions');
    assert.equal((await fetch(`${base}/api/overview`)).status, 403);
  } finally {
    await app.close();
  }
  const bad = Fastify();
  bad.register(dashboard, { prefix: '/tideq', url: redis.url });
  await assert.rejects(bad.ready(), TypeError);
});

// What the Redis server says of itself (`client.serverInfo()`), and the stats that count the
// completed jobs kept apart from every job ever completed (`completedKept`) and the flow jobs
// waiting for their children (`waiting`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, startRedis, tideq, useRedis } from './harness.mjs';

const redis = useRedis();

test('serverInfo gives the version, memory, policy, clients and load', async () => {
  const { client } = freshJobQueue(redis.url);
  const info = await client.serverInfo();
  assert.equal(info.server, 'redis');
  assert.match(info.version, /^7\./);
  assert.ok(info.usedMemory > 0 && info.connectedClients >= 1);
  assert.deepEqual([info.maxmemoryPolicy, info.evicts, info.nodes], ['noeviction', false, 1]);
  assert.deepEqual(Object.keys(info).sort(), ['connectedClients', 'evicts', 'maxmemory', 'maxmemoryPolicy', 'nodes', 'opsPerSec', 'server', 'uptimeSecs', 'usedMemory', 'version']);
});

test('serverInfo says when the policy evicts jobs', async () => {
  const server = await startRedis(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
  try {
    const info = await new tideq.Client({ url: server.url, evictionCheck: 'off' }).serverInfo();
    assert.deepEqual([info.maxmemoryPolicy, info.evicts, info.maxmemory], ['allkeys-lru', true, 100 * 1024 * 1024]);
  } finally {
    await server.stop();
  }
});

test('stats count the completed jobs kept apart from the lifetime counter, and waiting flow jobs', async () => {
  const { queue } = freshJobQueue(redis.url, { keepCompleted: 3 });
  for (let i = 0; i < 5; i++) await queue.enqueue(Buffer.from('x'));
  for (const job of await queue.leaseJobs(5, { leaseMs: 60_000 })) await queue.complete(job);
  await queue.enqueueFlow({ payload: Buffer.from('p'), id: 'parent', children: [{ payload: Buffer.from('k'), id: 'kid', delayMs: 3_600_000 }] });
  const s = await queue.stats();
  assert.deepEqual([s.completed, s.completedKept, s.waiting], [5, 3, 1]);
  assert.equal((await queue.jobs('completed')).length, 3);
});

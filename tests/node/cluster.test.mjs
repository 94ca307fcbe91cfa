// Both queue kinds through the Node binding on a real local Redis Cluster (6 nodes: 3 masters,
// 3 replicas, started by tests/cluster/redis-cluster.sh for this file): every operation runs
// without CROSSSLOT, and sharded queues spread over the masters and still deliver everything
// once. Mirrors core/tests/cluster.rs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, redisCommand, sleep, tideq, unique, waitFor } from './harness.mjs';

const { Client, CappedQueue, Queue } = tideq;
const SCRIPT = join(ROOT, 'tests/cluster/redis-cluster.sh');
const fast = { backoff: { type: 'fixed', delayMs: 20 } };

const cluster = { dir: '', nodes: [] };

before(() => {
  cluster.dir = mkdtempSync(join(tmpdir(), 'tideq-node-cluster-'));
  const seeds = execFileSync('bash', [SCRIPT, 'start', cluster.dir], { encoding: 'utf8', timeout: 60_000 }).trim();
  cluster.nodes = seeds.split(',').map((hostPort) => `redis://${hostPort}`);
});

after(() => {
  if (cluster.dir) execFileSync('bash', [SCRIPT, 'stop', cluster.dir]);
});

/** A Client on the cluster with its own key prefix. */
function clusterClient() {
  const prefix = unique('t');
  return { client: new Client({ cluster: cluster.nodes, prefix }), prefix };
}

/** The masters of the cluster that hold at least one key starting with `prefix:`. */
async function mastersHolding(prefix) {
  const holding = new Set();
  for (const url of cluster.nodes) {
    const role = await redisCommand(url, 'ROLE');
    if (role[0] !== 'master') continue;
    if ((await redisCommand(url, 'KEYS', `${prefix}:*`)).length > 0) holding.add(url);
  }
  return holding;
}

test('a Client on cluster seeds reaches the cluster', async () => {
  const { client } = clusterClient();
  await client.ping();
  assert.equal(client.url, cluster.nodes[0]);
});

test('a capped queue works end to end on the cluster: push, pushMany, len, popBatch, nextBatch, groups, stats, consume', async () => {
  const { client } = clusterClient();
  const queue = new CappedQueue(unique('cc'), { client, capacity: 5 });
  assert.equal(queue.shards, 1);
  assert.equal(await queue.push('g1', 'a'), 0);
  const pairs = Array.from({ length: 2500 }, (_, i) => [`g${i % 7}`, String(i)]);
  const drops = await queue.pushMany(pairs);
  assert.equal(drops.length, 2500);
  assert.equal(await queue.len('g1'), 5);
  assert.equal((await queue.groups()).length, 7);
  assert.equal((await queue.popBatch('g1', 2)).length, 2);
  const batch = await queue.nextBatch(10);
  assert.ok(batch && batch.items.length > 0);
  const seen = [];
  const consumer = queue.consume((group, items) => seen.push(...items.map(String)), { stopWhenEmpty: true, pollIntervalMs: 100 });
  const cstats = await consumer.join();
  const s = await queue.stats();
  assert.equal(s.pushed, 2501);
  assert.equal(s.pushed, s.dropped + s.delivered);
  assert.equal(s.delivered, 2 + batch.items.length + seen.length);
  assert.equal(cstats.items, seen.length);
  assert.equal(s.groups, 0);
});

test('a job queue works end to end on the cluster: enqueue, enqueueMany, get, cancel, work, deadLetters, requeue, purge, stats', async () => {
  const { client } = clusterClient();
  const queue = new Queue(unique('cj'), { client, maxAttempts: 2, ...fast });
  const res = await queue.enqueueMany(Array.from({ length: 1200 }, (_, i) => ({ payload: Buffer.from('x'), id: `j${i}` })));
  assert.equal(res.filter((r) => r.created).length, 1200);
  assert.deepEqual(await queue.enqueue(Buffer.from('d'), { id: 'later', delayMs: 60_000 }), { id: 'later', created: true });
  assert.equal((await queue.get('later')).state, 'delayed');
  await queue.cancel('later');
  assert.equal(await queue.get('later'), null);
  await queue.enqueue(Buffer.from('bad'), { id: 'bad' });
  const stats = await queue
    .work((job) => {
      if (job.id === 'bad') throw new Error('no');
    }, { stopWhenDrained: true, pollIntervalMs: 100, onError: () => {} })
    .join();
  assert.equal(stats.completed, 1200);
  assert.equal(stats.failed, 2);
  assert.equal((await queue.get('j1199')).state, 'completed'); // the newest 1000 are kept
  const dead = await queue.deadLetters();
  assert.deepEqual(dead.map((j) => [j.id, j.lastError]), [['bad', 'Error: no']]);
  await queue.requeue('bad');
  assert.equal((await queue.get('bad')).state, 'ready');
  await queue.work(() => Promise.reject(new Error('still no')), { stopWhenDrained: true, pollIntervalMs: 100, onError: () => {} }).join();
  assert.equal(await queue.purge(), 1);
  const s = await queue.stats();
  assert.deepEqual(
    [s.enqueued, s.completed, s.deadLettered, s.cancelled, s.ready, s.delayed, s.active, s.dead],
    [1202, 1200, 2, 1, 0, 0, 0, 0],
  );
});

test('a sharded job queue (shards: 3) spreads over the masters; a worker processes every job exactly once; get and cancel by id; stats add up', async () => {
  const { client, prefix } = clusterClient();
  const name = unique('sj');
  const queue = new Queue(name, { client, shards: 3, ...fast });
  assert.equal(queue.shards, 3);
  let n = 600;
  await queue.enqueueMany(Array.from({ length: n }, (_, i) => ({ payload: Buffer.from(String(i)), id: `s${i}` })));
  // Idempotent ids across shards: enqueuing them again creates nothing.
  const again = await queue.enqueueMany(Array.from({ length: 50 }, (_, i) => ({ payload: Buffer.from('dup'), id: `s${i}` })));
  assert.ok(again.every((r) => !r.created));
  for (let i = 0; i < 6; i++) await queue.enqueue(Buffer.from('later'), { id: `d${i}`, delayMs: 60_000 });
  assert.equal(await queue.get('s5').then((j) => j.payload.toString()), '5');
  for (let i = 0; i < 3; i++) await queue.cancel(`d${i}`);
  await assert.rejects(queue.cancel('d0'), { code: 'JOB_NOT_FOUND' });
  assert.equal((await mastersHolding(prefix)).size, 3, 'the 3 shards sit on the 3 masters');
  const before = await queue.stats();
  assert.deepEqual([before.enqueued, before.ready, before.delayed, before.cancelled], [n + 6, n, 3, 3]);

  // A second handle with the same shard count sees the same jobs.
  const other = new Queue(name, { client: new Client({ cluster: cluster.nodes, prefix }), shards: 3 });
  assert.equal((await other.get('s599')).state, 'ready');

  const seen = new Map();
  const worker = queue.work(
    (job) => {
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
      assert.equal(job.payload.toString(), job.id.slice(1));
    },
    // A long poll: an idle worker must be woken by enqueues on any shard.
    { concurrency: 8, pollIntervalMs: 10_000 },
  );
  await waitFor(() => seen.size === n, `${n} jobs processed`, 20_000);
  // Now idle: jobs enqueued on every shard wake it up.
  const t0 = Date.now();
  for (let i = n; i < n + 30; i++) await queue.enqueue(Buffer.from(String(i)), { id: `s${i}` });
  await waitFor(() => seen.size === n + 30, 'jobs enqueued while the worker waited', 5_000);
  assert.ok(Date.now() - t0 < 5_000);
  const wstats = await worker.shutdown();
  n += 30;
  assert.equal(seen.size, n);
  assert.ok([...seen.values()].every((c) => c === 1), 'a job was processed twice');
  assert.equal(wstats.completed, n);
  const s = await queue.stats();
  assert.deepEqual(
    [s.enqueued, s.completed, s.cancelled, s.ready, s.active, s.delayed, s.dead, s.deadLettered],
    [n + 6, n, 3, 0, 0, 3, 0, 0],
  );
  assert.equal((await queue.get('s123')).state, 'completed');
  assert.equal((await queue.get('d4')).state, 'delayed');
});

test('a sharded capped queue (shards: 3) spreads over the masters and a consumer delivers every item once', async () => {
  const { client, prefix } = clusterClient();
  const queue = new CappedQueue(unique('sc'), { client, shards: 3, capacity: 10_000 });
  assert.equal(queue.shards, 3);
  const pairs = [];
  for (let g = 0; g < 30; g++) for (let i = 0; i < 40; i++) pairs.push([`g${g}`, `g${g}/${i}`]);
  await queue.pushMany(pairs);
  assert.equal((await queue.groups()).length, 30);
  assert.equal((await mastersHolding(prefix)).size, 3, 'the 3 shards sit on the 3 masters');
  const seen = [];
  const stats = await queue
    .consume((group, items) => seen.push(...items.map(String)), { concurrency: 3, batchSize: 16, stopWhenEmpty: true, pollIntervalMs: 100 })
    .join();
  assert.equal(seen.length, pairs.length);
  assert.equal(stats.items, pairs.length);
  // An idle consumer with a long poll is woken by pushes to groups on any shard.
  const waiting = [];
  const consumer = queue.consume((group, items) => waiting.push(...items.map(String)), { pollIntervalMs: 10_000 });
  await sleep(200);
  const late = Array.from({ length: 12 }, (_, i) => [`late${i}`, `late${i}/0`]);
  for (const [g, item] of late) await queue.push(g, item);
  await waitFor(() => waiting.length === late.length, 'items pushed while the consumer waited', 5_000);
  await consumer.shutdown();
  assert.deepEqual(waiting.sort(), late.map(([, item]) => item).sort());
  seen.push(...waiting);
  pairs.push(...late);
  assert.equal(new Set(seen).size, seen.length, 'an item was delivered twice');
  const s = await queue.stats();
  assert.deepEqual([s.pushed, s.delivered, s.dropped, s.groups], [pairs.length, pairs.length, 0, 0]);
});

// Replication through the Node binding, on real servers: a Sentinel-managed primary with one
// replica and three Sentinels (tests/cluster/redis-sentinel.sh) that fails over under a running
// worker and producer, and replicaAck (Redis WAIT) against a lone server. Mirrors
// core/tests/sentinel.rs.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';

import { ROOT, freshJobQueue, sleep, tideq, unique, useRedis, waitFor } from './harness.mjs';

const { Client, Queue } = tideq;
const SCRIPT = join(ROOT, 'tests/cluster/redis-sentinel.sh');
const MASTER = 'tideq-primary';
const run = promisify(execFile);

const redis = useRedis(); // a lone server, for replicaAck without replicas
const setup = { dir: '', primaryPort: '', replicaPort: '', sentinels: [] };

before(() => {
  setup.dir = mkdtempSync(join(tmpdir(), 'tideq-node-sentinel-'));
  const out = execFileSync('bash', [SCRIPT, 'start', setup.dir], { encoding: 'utf8', timeout: 60_000 }).trim();
  const [primaryPort, replicaPort, sentinels] = out.split(' ');
  Object.assign(setup, { primaryPort, replicaPort, sentinels: sentinels.split(',') });
});

after(() => {
  if (setup.dir) execFileSync('bash', [SCRIPT, 'stop', setup.dir]);
});

const sentinelPort = () => new URL(setup.sentinels[0]).port;

/** `redis-cli -p PORT ARGS...`, its reply lines. */
async function redisCli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 });
  return stdout.trim().split('\n');
}

/** The port of the node the Sentinels currently name as primary. */
const primaryPort = async () => (await redisCli(sentinelPort(), 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER))[1];

/** `master` or `slave` (`?` when the node does not answer). */
const role = (port) => redisCli(port, 'ROLE').then((lines) => lines[0], () => '?');

function sentinelClient(prefix, extra = {}) {
  return new Client({ sentinel: { sentinels: setup.sentinels, masterName: MASTER }, prefix, responseTimeoutMs: 2_000, ...extra });
}

test('across a Sentinel failover a running worker carries on and every acknowledged job is processed', async () => {
  const prefix = unique('t');
  const name = unique('sq');
  const oldPrimary = setup.primaryPort;
  assert.equal(await primaryPort(), oldPrimary);
  // The producer waits for a replica on each enqueue: after the Sentinels promote the replica,
  // the old primary keeps accepting writes until they demote it (~10 s later, when it drops its
  // data for the new primary's), so an enqueue acknowledged there without a replica could be lost.
  const producer = new Queue(name, { client: sentinelClient(prefix, { replicaAck: { replicas: 1, timeoutMs: 200 } }) });
  const consumer = new Queue(name, { client: sentinelClient(prefix) });
  const processed = new Set();
  // Attempts that fail are reported here, so a failure says why (a failed attempt is retried:
  // the promise is that every acknowledged job runs, checked below).
  const attemptErrors = [];
  const worker = consumer.work((job) => void processed.add(job.id), {
    concurrency: 4,
    pollIntervalMs: 200,
    onError: (err, job) => attemptErrors.push(`${job.id}: ${err?.message ?? err}`),
  });

  const acked = []; // [id, phase]: before the switch, while the old primary is still a master, after its demotion
  const errors = {};
  let phase = 'before';
  let demotedAt;
  const t0 = Date.now();
  for (let i = 0; Date.now() - t0 < 30_000; i++) {
    if (i === 20) await redisCli(sentinelPort(), 'SENTINEL', 'FAILOVER', MASTER);
    const id = `f${i}`;
    try {
      await producer.enqueue(Buffer.from('x'), { id });
      acked.push([id, phase]);
    } catch (err) {
      errors[err.code] = (errors[err.code] ?? 0) + 1;
    }
    if (phase === 'before' && i >= 20 && (await primaryPort()) !== oldPrimary) phase = 'switched';
    if (phase === 'switched' && (await role(oldPrimary)) === 'slave') {
      phase = 'demoted';
      demotedAt = i;
    }
    if (phase === 'demoted' && i >= demotedAt + 30) break;
    assert.equal(worker.running, true, 'the worker stopped');
    await sleep(20);
  }
  assert.equal(phase, 'demoted', `the failover never completed (phase ${phase}, errors ${JSON.stringify(errors)})`);
  assert.equal(await primaryPort(), setup.replicaPort);
  const afterDemotion = acked.filter(([, p]) => p === 'demoted').length;
  assert.ok(acked.some(([, p]) => p === 'before'), 'nothing acknowledged before the failover');
  assert.ok(afterDemotion >= 20, `only ${afterDemotion} enqueues acknowledged by the new primary`);

  await waitFor(() => acked.every(([id]) => processed.has(id)), 'every acknowledged job processed', 15_000).catch(() => {});
  const missing = acked.filter(([id]) => !processed.has(id));
  assert.deepEqual(missing, [], `acknowledged jobs never processed (errors ${JSON.stringify(errors)})`);
  // Same worker throughout: it was never restarted, and jobs written to the new primary after the
  // demotion reached it.
  assert.equal(worker.running, true);
  // An ack whose reply is cut off by the switch is retried and then refused as lease lost (the
  // first try had completed it), so it counts there: every job ran (checked above).
  const s = worker.stats();
  assert.ok(s.completed + s.leaseLost >= acked.length, JSON.stringify(s));
  const stats = await worker.shutdown();
  if (stats.failed > 0) console.error(`attempts failed across the failover: ${JSON.stringify(attemptErrors)}`);
  // A job can still be active here: a lease taken by a fetch whose reply the switch cut off
  // stays until it expires, and the job then runs again (at-least-once). Every acknowledged
  // job has run (checked above), so nothing is lost either way.
});

test('with replicaAck and no replica, enqueue rejects with NOT_REPLICATED yet the job is on the server', async () => {
  const { queue } = freshJobQueue(redis.url, {}, { replicaAck: { replicas: 1, timeoutMs: 100 } });
  const t0 = Date.now();
  await assert.rejects(queue.enqueue(Buffer.from('x'), { id: 'a' }), (err) => {
    assert.equal(err.code, 'NOT_REPLICATED');
    assert.match(err.message, /0 of 1 replica/);
    return true;
  });
  assert.ok(Date.now() - t0 >= 100, 'enqueue did not wait for the replicas');
  const job = await queue.get('a');
  assert.equal(job.state, 'ready');
  assert.equal(job.payload.toString(), 'x');
  // Enqueuing again with the same id is safe: nothing new is created.
  await assert.rejects(queue.enqueue(Buffer.from('x'), { id: 'a' }), { code: 'NOT_REPLICATED' });
  await assert.rejects(queue.enqueueMany([{ payload: Buffer.from('y'), id: 'b' }, { payload: Buffer.from('z'), id: 'a' }]), { code: 'NOT_REPLICATED' });
  const s = await queue.stats();
  assert.deepEqual([s.enqueued, s.ready], [2, 2]);
  // The jobs are usable: a worker on the same client processes them.
  const seen = [];
  const w = await queue.work((j) => void seen.push(j.id), { stopWhenDrained: true, pollIntervalMs: 100 }).join();
  assert.deepEqual(seen.sort(), ['a', 'b']);
  assert.equal(w.completed, 2);
});

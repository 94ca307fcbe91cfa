// Least privilege from Node: aclRules(queue, role) gives the ACL rules of each role, and every
// role works under exactly those rules (a Redis user created with them and nothing else), while
// a user of one role cannot do another's work. Mirrors core/tests/acl.rs.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';

import { redisCommand, rejectsWith, sleep, tideq, unique, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const { Client, CappedQueue, Queue, aclRules } = tideq;
const users = [];

/** A Client logged in as a fresh Redis user holding exactly `role`'s rules for `queue`. */
async function clientAs(role, queue, prefix) {
  const user = unique(role);
  users.push(user);
  const rules = aclRules(queue, role, { prefix });
  await redisCommand(redis.url, 'ACL', 'SETUSER', user, 'reset', 'on', '>pw', ...rules.split(' '));
  return new Client({ url: redis.url, username: user, password: 'pw', prefix });
}

async function dropUsers() {
  if (users.length) await redisCommand(redis.url, 'ACL', 'DELUSER', ...users.splice(0));
}

test('aclRules gives one line per role: the commands of its scripts and the keys of its queue only', () => {
  const worker = aclRules('emails', 'worker');
  assert.match(worker, /^resetchannels -@all /);
  for (const rule of ['+evalsha', '+lpop', '+blpop', '+zadd']) assert.ok(worker.split(' ').includes(rule), `${rule}: ${worker}`);
  assert.ok(worker.endsWith(' ~tideq:{emails}:*'), worker);
  assert.ok(!aclRules('emails', 'producer').split(' ').includes('+lpop'), 'a producer does not pop');
  const sharded = aclRules('emails', 'producer', { prefix: 'app', shards: 3 });
  assert.equal(sharded.match(/ ~app:\{emails#/g).length, 3, sharded);
  for (const role of ['admin', 'capped-producer', 'capped-consumer']) assert.match(aclRules('q', role), /~tideq:\{q\}:\*$/);
  assert.throws(() => aclRules('q', 'root'), { code: 'INVALID_ARGUMENT', message: /unknown role "root"/ });
  assert.throws(() => aclRules('e*', 'worker'), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => aclRules('q', 'worker', { shards: 0 }), { code: 'INVALID_ARGUMENT', message: /shards/ });
  assert.throws(() => aclRules('q', 'worker', { prefx: 'a' }), { code: 'INVALID_ARGUMENT', message: /unknown option "prefx"/ });
  assert.throws(() => aclRules(5, 'worker'), { code: 'INVALID_ARGUMENT', name: 'TypeError' });
});

test('each job-queue role works under exactly its rules; a producer cannot run a worker', async () => {
  const name = unique('acl');
  const prefix = unique('t');
  try {
    const options = { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 }, keepDead: 1 };
    const producer = new Queue(name, { client: await clientAs('producer', name, prefix), ...options });
    const worker = new Queue(name, { client: await clientAs('worker', name, prefix), ...options });
    const admin = new Queue(name, { client: await clientAs('admin', name, prefix), ...options });

    // The producer's calls.
    await producer.enqueue(Buffer.from('ok'), { id: 'a' });
    await producer.enqueueMany([
      { payload: Buffer.from('fail'), id: 'f1' },
      { payload: Buffer.from('fail'), id: 'f2' },
      { payload: Buffer.from('slow'), id: 's' },
      { payload: Buffer.from('ok'), delayMs: 50 },
    ]);

    // The worker's: fetch, complete, fail (retry, dead letter, trimming), lease renewal.
    const w = worker.work(
      async (job) => {
        if (job.text() === 'fail') throw new Error('boom');
        if (job.text() === 'slow') await sleep(250);
      },
      { leaseMs: 90, stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} },
    );
    const stats = await w.join();
    assert.equal(w.error, null);
    assert.deepEqual([stats.completed, stats.failed, stats.leaseLost], [3, 4, 0]);

    // The operator's.
    assert.equal((await admin.get('a')).state, 'completed');
    const s = await admin.stats();
    assert.deepEqual([s.dead, s.deadTrimmed], [1, 1]);
    const dead = await admin.deadLetters();
    assert.equal(dead.length, 1);
    await admin.requeue(dead[0].id);
    await producer.enqueue(Buffer.from('x'), { id: 'c', delayMs: 60_000 });
    await admin.cancel('c');
    assert.equal(await admin.requeueAll(), 0);
    assert.equal(await admin.purge(), 0);

    // A shutdown that hands a running job back (its handler stops on job.signal).
    await producer.enqueue(Buffer.from('slow'), { id: 'held' });
    let started = false;
    const holding = worker.work(
      async (job) => {
        started = true;
        await once(job.signal, 'abort');
        throw job.signal.reason;
      },
      { graceMs: 10 },
    );
    await waitFor(() => started, 'the worker to take a job');
    assert.ok((await holding.shutdown()).released >= 1);

    // No more than its role: a producer's user cannot fetch jobs.
    const refused = producer.work(() => {});
    await rejectsWith(() => refused.join(), 'PERMISSION');
    assert.equal(refused.error.code, 'PERMISSION');
    await rejectsWith(() => producer.stats(), 'PERMISSION');
  } finally {
    await dropUsers();
  }
});

test('each capped-queue role works under exactly its rules; a consumer cannot push', async () => {
  const name = unique('acl-capped');
  const prefix = unique('t');
  try {
    const producer = new CappedQueue(name, { client: await clientAs('capped-producer', name, prefix), capacity: 2 });
    const consumer = new CappedQueue(name, { client: await clientAs('capped-consumer', name, prefix), capacity: 2 });
    await producer.push('g1', 'a');
    await producer.pushMany([['g1', 'b'], ['g1', 'c'], ['g2', 'd']]);
    assert.equal(await consumer.len('g1'), 2);
    assert.equal((await consumer.groups()).length, 2);
    assert.equal((await consumer.stats()).dropped, 1);
    assert.deepEqual((await consumer.popBatch('g1', 1)).map(String), ['b']);
    assert.ok(await consumer.nextBatch(10));
    await producer.push('g3', 'e');
    const items = [];
    const c = consumer.consume((group, batch) => void items.push(...batch.map(String)), { stopWhenEmpty: true, pollIntervalMs: 50 });
    await c.join();
    assert.equal(c.error, null);
    assert.ok(items.includes('e'), JSON.stringify(items));
    await rejectsWith(() => consumer.push('g1', 'x'), 'PERMISSION');
    await rejectsWith(() => producer.popBatch('g1', 1), 'PERMISSION');
  } finally {
    await dropUsers();
  }
});

// Credentials that rotate from Node (issue 45, part 2): `credentialsProvider` (a function or an
// async one) is asked on every new connection, connections log in again after the ACL password
// changes while a worker runs, and no job is lost; a provider that throws is an AUTH error naming
// it, asked again on the next reconnection; a provider beside a password is refused. Mirrors
// core/tests/credentials.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { redisCommand, rejectsWith, sleep, startRedis, tideq, unique } from './harness.mjs';

const { Client, Queue } = tideq;

async function withUser(password) {
  const server = await startRedis();
  const user = unique('app');
  await redisCommand(server.url, 'ACL', 'SETUSER', user, 'reset', 'on', `>${password}`, '~*', '&*', '+@all');
  return { server, user };
}

test('a rotated password re-authenticates every connection and loses no job', async () => {
  const { server, user } = await withUser('old');
  try {
    let password = 'old';
    let calls = 0;
    let before = 0;
    const client = new Client({
      url: server.url,
      credentialsProvider: async () => {
        calls += 1;
        await sleep(1);
        return { username: user, password };
      },
    });
    const q = new Queue(unique('rot'), { client });
    const seen = new Set();
    const worker = q.work(async (job) => {
      seen.add(job.id);
    }, { concurrency: 4 });
    const jobs = 600;
    for (let i = 0; i < jobs; i++) {
      if (i === jobs / 2) {
        before = calls;
        await redisCommand(server.url, 'ACL', 'SETUSER', user, '>new');
        password = 'new';
        await redisCommand(server.url, 'ACL', 'SETUSER', user, '<old');
        await redisCommand(server.url, 'CLIENT', 'KILL', 'USER', user);
      }
      // An enqueue met by the kill may fail with CONNECTION: sent again with its id.
      for (let tries = 0; ; tries++) {
        try {
          await q.enqueue(Buffer.from('x'), { id: `j${i}` });
          break;
        } catch (err) {
          assert.equal(err.code, 'CONNECTION', String(err));
          assert.ok(tries < 50, String(err));
          await sleep(20);
        }
      }
    }
    const deadline = Date.now() + 60_000;
    while ((await q.stats()).completed < jobs && Date.now() < deadline) await sleep(50);
    await worker.shutdown();
    const stats = await q.stats();
    assert.equal(stats.completed, jobs);
    assert.equal(seen.size, jobs);
    assert.deepEqual([stats.ready, stats.active, stats.dead], [0, 0, 0]);
    // How many connections a worker holds at the kill varies; each one killed logs in again.
    assert.ok(before >= 1 && calls > before, `${before} calls before the rotation, ${calls} in all`);
  } finally {
    await server.stop();
  }
});

test('a sync provider is asked once per new connection', async () => {
  const { server, user } = await withUser('pw');
  try {
    let calls = 0;
    const client = new Client({
      url: server.url,
      credentialsProvider: () => {
        calls += 1;
        return { username: user, password: 'pw' };
      },
    });
    assert.equal(calls, 0);
    await client.ping();
    await client.ping();
    assert.equal(calls, 1);
    await redisCommand(server.url, 'CLIENT', 'KILL', 'USER', user);
    for (let i = 0; i < 5; i++) {
      try {
        await client.ping();
        break;
      } catch (err) {
        assert.equal(err.code, 'CONNECTION', String(err));
      }
    }
    assert.equal(calls, 2);
  } finally {
    await server.stop();
  }
});

test('a provider that throws is an AUTH error naming it, and is asked again', async () => {
  const server = await startRedis(['--requirepass', 'pw'], { password: 'pw' });
  try {
    let fail = true;
    const client = new Client({
      url: server.url,
      credentialsProvider: async () => {
        if (fail) throw new Error('token service down');
        return 'pw';
      },
    });
    await rejectsWith(() => client.ping(), 'AUTH', Error, /credentials provider failed: .*token service down/);
    fail = false;
    await client.ping();
    const bad = new Client({ url: server.url, credentialsProvider: () => 42 });
    await rejectsWith(() => bad.ping(), 'AUTH', Error, /credentials provider failed: .*must be an object/);
  } finally {
    await server.stop();
  }
});

test('a provider beside a password is refused', () => {
  const credentialsProvider = () => 'pw';
  for (const opts of [{ url: 'redis://:pw@127.0.0.1:6379' }, { password: 'pw' }]) {
    assert.throws(() => new Client({ ...opts, credentialsProvider }), {
      code: 'INVALID_ARGUMENT',
      message: /credentials provider/,
    });
  }
  assert.throws(() => new Client({ credentialsProvider: 'pw' }), { code: 'INVALID_ARGUMENT', name: 'TypeError' });
});

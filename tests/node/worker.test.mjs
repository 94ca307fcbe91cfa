// The worker runtime through the Node binding: JS handlers (sync and async) called by the core's
// fetch loop, leases kept alive by a Rust task (even while the event loop is blocked), workers
// that die (SIGKILL) or freeze (SIGSTOP), timeouts and job.signal, graceful shutdown and abort(),
// run() on signals, error reporting, core log lines on stderr, and the process exiting after
// shutdown. Mirrors core/tests/jobs.rs and core/tests/worker.rs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';
import { test } from 'node:test';

import { ROOT, freePort, freshJobQueue, freshQueue, runNode, sleep, tideq, unique, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/job_child.mjs');
const fast = { backoff: { type: 'fixed', delayMs: 50 } };
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

/** Starts `job_child.mjs MODE` on `queue`; `child.out()` is its stdout so far. */
function startChild(mode, queue, prefix, { url = redis.url, env = {} } = {}) {
  let child;
  const done = runNode([CHILD, mode, url, prefix, queue.name], {
    timeoutMs: 20_000,
    env,
    onSpawn: (c, readStdout) => {
      child = c;
      child.out = readStdout;
    },
  });
  return { child, done };
}

const lines = (text, prefix) => text.split('\n').filter((l) => l.startsWith(prefix));
const statsLine = (stdout) => JSON.parse(lines(stdout, 'stats ').at(-1).slice('stats '.length));

test('a handler gets the job: id, payload Buffer, attempt, maxAttempts, enqueuedAt, startedAt, queue, timeoutMs, text(), json()', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('{"order":42,"note":"é"}'), { id: 'j1', maxAttempts: 3, timeoutMs: 5_000 });
  await queue.enqueue(Buffer.from([0xff, 0xfe]), { id: 'bin' });
  const got = {};
  const stats = await queue
    .work(
      (job) => {
        got[job.id] = {
          job,
          payload: job.payload,
          same: job.payload === job.payload,
          fields: [job.attempt, job.maxAttempts, job.queue, job.timeoutMs],
          enqueuedAt: job.enqueuedAt,
          startedAt: job.startedAt,
        };
        if (job.id === 'j1') {
          got.j1.text = job.text();
          got.j1.json = job.json();
          got.j1.logged = JSON.parse(JSON.stringify(job));
          got.j1.inspected = inspect(job);
        } else {
          assert.throws(() => job.text(), { code: 'INVALID_ARGUMENT' });
        }
      },
      drained,
    )
    .join();
  assert.equal(stats.completed, 2);
  const j1 = got.j1;
  assert.ok(j1.job instanceof tideq.Job);
  assert.ok(Buffer.isBuffer(j1.payload));
  assert.ok(j1.same, 'job.payload returns the same Buffer on every read');
  assert.equal(j1.text, '{"order":42,"note":"é"}');
  assert.deepEqual(j1.json, { order: 42, note: 'é' });
  assert.deepEqual(j1.fields, [1, 3, queue.name, 5_000]);
  assert.deepEqual(j1.logged, { id: 'j1', queue: queue.name, task: null, attempt: 1, maxAttempts: 3, enqueuedAt: j1.enqueuedAt, startedAt: j1.startedAt, timeoutMs: 5_000 });
  assert.ok(j1.startedAt >= j1.enqueuedAt, 'startedAt: when the attempt was leased (Redis clock)');
  assert.match(j1.inspected, /id: 'j1'/);
  assert.match(j1.inspected, /payload: <Buffer 7b/);
  assert.ok(j1.enqueuedAt > 1.7e12);
  assert.deepEqual([...got.bin.payload], [0xff, 0xfe]);
  assert.equal(got.bin.fields[3], null, 'no timeout: timeoutMs is null');
});

test('a worker with sync or async handlers runs every job exactly once, at most concurrency at a time', async () => {
  for (const kind of ['sync', 'async']) {
    const { queue } = freshJobQueue(redis.url, fast);
    await queue.enqueueMany(Array.from({ length: 300 }, (_, i) => ({ payload: Buffer.from(String(i)), id: `j${i}` })));
    const seen = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const handler =
      kind === 'sync'
        ? (job) => seen.push(job.id)
        : async (job) => {
            maxInFlight = Math.max(maxInFlight, ++inFlight);
            await sleep(2);
            seen.push(job.id);
            inFlight--;
          };
    const worker = queue.work(handler, { concurrency: 4, ...drained });
    const stats = await worker.join();
    assert.equal(seen.length, 300, kind);
    assert.equal(new Set(seen).size, 300, `${kind}: a job ran twice`);
    assert.deepEqual(stats, { completed: 300, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
    assert.equal(worker.running, false);
    if (kind === 'async') assert.ok(maxInFlight > 1 && maxInFlight <= 4, `maxInFlight ${maxInFlight}`);
    assert.equal((await queue.stats()).completed, 300);
  }
});

/** The run-time histogram's count in a worker's `metrics()`. */
const runSecondsCount = (text, queue) => {
  const prefix = `tideq_worker_job_run_seconds_count{queue="${queue}"} `;
  const found = text.split('\n').filter((l) => l.startsWith(prefix));
  assert.equal(found.length, 1, text);
  return Number(found[0].slice(prefix.length));
};

test("worker.metrics() is the worker's own counters and run times as Prometheus text, labelled with the queue, also after join(); task and batch workers too", async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  for (const p of ['ok', 'ok', 'ok']) await queue.enqueue(Buffer.from(p));
  await queue.enqueue(Buffer.from('bad'), { maxAttempts: 1 });
  const worker = queue.work(
    (job) => {
      if (job.text() === 'bad') throw new Error('no');
    },
    { ...drained, onError: () => {} },
  );
  assert.equal(typeof worker.metrics(), 'string', 'a plain call, while it runs');
  const stats = await worker.join();
  assert.deepEqual([stats.completed, stats.failed], [3, 1]);
  const text = worker.metrics();
  const q = `queue="${queue.name}"`;
  assert.ok(text.includes(`tideq_worker_jobs_completed_total{${q}} 3\n`), text);
  assert.ok(text.includes(`tideq_worker_jobs_failed_total{${q}} 1\n`), text);
  assert.ok(text.includes('# TYPE tideq_worker_job_run_seconds histogram'), text);
  assert.equal(runSecondsCount(text, queue.name), 4);
  assert.equal(worker.metrics(), text, 'stopped: nothing changes');

  await queue.enqueueTask('add', [1, 2]);
  const tasks = queue.work({ add: ([x, y]) => x + y }, drained);
  assert.equal((await tasks.join()).completed, 1);
  assert.ok(tasks.metrics().includes(`tideq_worker_jobs_completed_total{${q}} 1\n`), tasks.metrics());
  assert.equal(runSecondsCount(tasks.metrics(), queue.name), 1);

  for (const p of ['a', 'b', 'c']) await queue.enqueue(Buffer.from(p));
  const batches = queue.workBatches(() => {}, { size: 3, ...drained });
  assert.equal((await batches.join()).completed, 3);
  assert.ok(batches.metrics().includes(`tideq_worker_jobs_completed_total{${q}} 3\n`), batches.metrics());
});

test('the concurrency bound holds for sync handlers too: never more jobs leased at once than concurrency', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  await queue.enqueueMany(Array.from({ length: 40 }, (_, i) => ({ payload: Buffer.from(String(i)), id: `s${i}` })));
  const u = new URL(redis.url);
  const active = `${prefix}:{${queue.name}}:active`;
  const leased = [];
  const handler = (job) => {
    // Sync: blocks the event loop while it asks Redis how many jobs are leased right now.
    // Leases have finite deadlines; the zset also holds an anchor member scored +inf.
    leased.push(Number(execFileSync('redis-cli', ['-h', u.hostname, '-p', u.port, 'ZCOUNT', active, '-inf', '(+inf'], { encoding: 'utf8' })));
    job.text();
  };
  const stats = await queue.work(handler, { concurrency: 3, ...drained }).join();
  assert.equal(stats.completed, 40);
  assert.equal(leased.length, 40);
  assert.ok(Math.max(...leased) <= 3, `up to ${Math.max(...leased)} jobs leased at once`);
  assert.ok(Math.max(...leased) > 1, 'the sync handler had jobs waiting for it (the bound was exercised)');
});

test('a worker process killed with SIGKILL mid-job loses nothing: a new worker completes every job, the killed ones as attempt 2', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  const ids = Array.from({ length: 6 }, (_, i) => `k${i}`);
  await queue.enqueueMany(ids.map((id) => ({ payload: Buffer.from(id), id })));
  const { child, done } = startChild('hang', queue, prefix);
  await waitFor(() => lines(child.out(), 'handling ').length === 2, 'the child to take two jobs');
  child.kill('SIGKILL');
  const res = await done;
  assert.equal(res.signal, 'SIGKILL');
  const killed = lines(res.stdout, 'handling ').map((l) => l.split(' ')[1]);
  assert.equal(killed.length, 2);
  for (const id of killed) assert.equal((await queue.get(id)).state, 'active');

  const attempts = {};
  const stats = await queue.work((job) => (attempts[job.id] = job.attempt), drained).join();
  assert.equal(stats.completed, 6);
  assert.deepEqual(Object.keys(attempts).sort(), ids);
  for (const id of ids) assert.equal(attempts[id], killed.includes(id) ? 2 : 1, id);
  const s = await queue.stats();
  assert.equal(s.recovered, 2);
  assert.equal(s.completed, 6);
  assert.deepEqual([s.ready, s.active, s.delayed, s.dead], [0, 0, 0, 0]);
});

test("a SIGSTOPped worker's late ack is rejected: another worker completes the job as attempt 2", async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'slow' });
  const { child, done } = startChild('slow', queue, prefix);
  await waitFor(() => child.out().includes('handling slow 1'), 'the child to take the job');
  child.kill('SIGSTOP');
  try {
    const attempts = [];
    const stats = await queue.work((job) => attempts.push(job.attempt), drained).join();
    assert.deepEqual(attempts, [2], 'recovered after the lease expired, exactly once');
    assert.equal(stats.completed, 1);
  } finally {
    child.kill('SIGCONT');
  }
  const res = await done;
  assert.equal(res.code, 0, res.stderr);
  assert.ok(res.stdout.includes('handled'), res.stdout);
  assert.deepEqual(statsLine(res.stdout), { completed: 0, failed: 0, leaseLost: 1, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  const info = await queue.get('slow');
  assert.deepEqual([info.state, info.attempts], ['completed', 2]);
  assert.equal((await queue.stats()).recovered, 1);
});

for (const kind of ['async (awaiting)', 'sync (blocking the event loop)']) {
  test(`a handler running 3x the lease is not redelivered: ${kind}`, async () => {
    const { queue } = freshJobQueue(redis.url, fast);
    await queue.enqueue(Buffer.from('long'), { id: 'long' });
    let calls = 0;
    const handler = kind.startsWith('async')
      ? async () => {
          calls++;
          await sleep(1_500);
        }
      : () => {
          calls++;
          const end = Date.now() + 1_500;
          while (Date.now() < end) {
            // busy: the JS thread is blocked; renewal runs on a Rust task
          }
        };
    const t0 = Date.now();
    const stats = await queue.work(handler, { leaseMs: 500, concurrency: 2, ...drained }).join();
    assert.ok(Date.now() - t0 >= 1_500);
    assert.equal(calls, 1, 'the long job was redelivered');
    assert.deepEqual(stats, { completed: 1, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
    const s = await queue.stats();
    assert.equal(s.recovered, 0);
    assert.equal((await queue.get('long')).attempts, 1);
  });
}

test('job.signal fires at the timeout: a handler waiting for it settles right after timeoutMs, the attempt fails as timed out and the job is retried', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'stuck', timeoutMs: 200, maxAttempts: 2 });
  const attempts = [];
  const stats = await queue
    .work(
      async (job) => {
        const startedAt = Date.now();
        attempts.push({ attempt: job.attempt, aborted: job.signal.aborted });
        if (job.attempt > 1) return;
        await once(job.signal, 'abort');
        Object.assign(attempts[0], { after: Date.now() - startedAt, reason: job.signal.reason });
        throw job.signal.reason;
      },
      { ...drained, onError: () => {} },
    )
    .join();
  assert.deepEqual(
    attempts.map((a) => [a.attempt, a.aborted]),
    [[1, false], [2, false]],
  );
  const first = attempts[0];
  assert.ok(first.after >= 195 && first.after < 1_000, `aborted after ${first.after} ms`);
  assert.ok(first.reason instanceof Error);
  assert.equal(first.reason.message, 'timed out after 200 ms');
  assert.deepEqual([stats.failed, stats.completed, stats.released], [1, 1, 0]);
  const info = await queue.get('stuck');
  assert.deepEqual([info.state, info.attempts], ['completed', 2]);
  assert.match(info.lastError, /timed out after 200/);
});

test('a handler ignoring job.signal keeps its slot past timeoutMs: at most one runs at a time, and attempt 2 starts only after attempt 1 settled', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'slow', timeoutMs: 200, maxAttempts: 2 });
  const runs = [];
  let running = 0;
  let maxRunning = 0;
  const stats = await queue
    .work(
      async (job) => {
        maxRunning = Math.max(maxRunning, ++running);
        const run = { attempt: job.attempt, start: Date.now() };
        runs.push(run);
        await delay(1_000); // ignores job.signal
        run.end = Date.now();
        run.aborted = job.signal.aborted;
        running--;
      },
      { ...drained, concurrency: 1 },
    )
    .join();
  assert.equal(maxRunning, 1);
  assert.deepEqual(runs.map((r) => [r.attempt, r.aborted]), [[1, true], [2, true]]);
  assert.ok(runs[1].start >= runs[0].end, `attempt 2 started ${runs[0].end - runs[1].start} ms before attempt 1 settled`);
  assert.deepEqual([stats.failed, stats.completed], [2, 0]);
  const info = await queue.get('slow');
  assert.deepEqual([info.state, info.attempts], ['dead', 2]);
  assert.match(info.lastError, /timed out/);
});

test('graceful shutdown lets a running job finish within grace; one that stops on job.signal after graceMs goes back to the front of the queue, its attempt not counted', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueueMany([
    { payload: Buffer.from('quick'), id: 'quick' },
    { payload: Buffer.from('endless'), id: 'endless' },
    { payload: Buffer.from('waiting'), id: 'waiting' },
  ]);
  let started = 0;
  const reported = [];
  const reasons = [];
  const worker = queue.work(
    async (job) => {
      started++;
      if (job.id === 'endless') {
        await once(job.signal, 'abort');
        reasons.push(job.signal.reason.message);
        throw job.signal.reason;
      }
      await sleep(100);
    },
    { concurrency: 2, graceMs: 300, onError: (err, job) => reported.push(job.id) },
  );
  await waitFor(() => started === 2, 'both jobs to start');
  assert.equal(worker.running, true);
  const t0 = Date.now();
  const stats = await worker.shutdown();
  const took = Date.now() - t0;
  assert.ok(took >= 290 && took < 2_000, `shutdown took ${took} ms`);
  assert.deepEqual([stats.completed, stats.released, stats.failed], [1, 1, 0]);
  assert.deepEqual(reasons, ['the worker is shutting down']);
  assert.deepEqual(reported, [], 'a job handed back at shutdown is not reported as failed');
  assert.equal(worker.running, false);
  assert.equal(worker.error, null);
  const endless = await queue.get('endless');
  assert.equal(endless.state, 'ready', 'returned to the queue, not left to its lease');
  assert.equal(endless.attempts, 0, 'a returned attempt is not counted');
  assert.equal((await queue.get('quick')).state, 'completed');
  // Stopped: it takes nothing more; stop()/join()/shutdown()/abort() again are harmless.
  worker.stop();
  worker.abort();
  assert.deepEqual(await worker.join(), stats);
  assert.deepEqual(worker.stats(), stats);
  // The returned job is at the front: it runs before the one that waited behind it.
  const order = [];
  await queue.work((job) => void order.push(job.id), { ...drained, concurrency: 1 }).join();
  assert.deepEqual(order, ['endless', 'waiting']);
});

test('a handler ignoring job.signal at shutdown keeps its job: another worker never starts it meanwhile, and it ends completed', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'long' });
  const runs = [];
  const first = queue.work(
    async (job) => {
      const run = { by: 'first', start: Date.now() };
      runs.push(run);
      await delay(1_500); // ignores job.signal
      run.end = Date.now();
      run.aborted = job.signal.aborted;
    },
    { graceMs: 100, leaseMs: 300 },
  );
  await waitFor(() => runs.length === 1, 'the first worker to take the job');
  const second = queue.work(
    (job) => {
      runs.push({ by: 'second', start: Date.now(), attempt: job.attempt });
    },
    { pollIntervalMs: 50 },
  );
  const stats = await first.shutdown();
  assert.deepEqual([stats.completed, stats.released, stats.failed], [1, 0, 0]);
  await sleep(500); // the second worker would have picked up a released or expired job by now
  await second.shutdown();
  assert.deepEqual(runs.map((r) => r.by), ['first'], JSON.stringify(runs));
  assert.equal(runs[0].aborted, true, 'job.signal was aborted after graceMs');
  const info = await queue.get('long');
  assert.deepEqual([info.state, info.attempts], ['completed', 1]);
});

test('an idle worker wakes within milliseconds when a job is enqueued', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  let handledAt = 0;
  const worker = queue.work(() => (handledAt = Date.now()), { pollIntervalMs: 5_000 });
  await sleep(200);
  const t0 = Date.now();
  await queue.enqueue(Buffer.from('wake'));
  await waitFor(() => handledAt > 0, 'the job to be handled');
  assert.ok(handledAt - t0 < 1_000, `picked up after ${handledAt - t0} ms`);
  await worker.shutdown();
});

test('shutdown() keeps waiting for a handler that never settles; abort() stops at once, the job left to its lease, and the process exits by itself', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  const t0 = Date.now();
  const { done } = startChild('shutdown', queue, prefix);
  const res = await done;
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /after 1 s: settled false, running true, signal the worker is shutting down/);
  assert.deepEqual(statsLine(res.stdout), { completed: 1, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  assert.match(res.stdout, /signal the worker is shutting down/);
  assert.ok(Date.now() - t0 < 10_000);
  const endless = await queue.get('endless');
  assert.deepEqual([endless.state, endless.attempts], ['active', 1], 'left to its lease');
});

test('abort() abandons a running handler at once: its job.signal is aborted and its job left to its lease', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'abandoned' });
  let reason = null;
  let started = false;
  const worker = queue.work(
    async (job) => {
      started = true;
      await once(job.signal, 'abort');
      reason = job.signal.reason;
    },
    { graceMs: 10_000 },
  );
  await waitFor(() => started, 'the handler to start');
  worker.abort();
  const stats = await worker.join();
  assert.deepEqual(stats, { completed: 0, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  assert.equal(worker.running, false);
  await waitFor(() => reason !== null, 'the signal to be aborted');
  assert.match(reason.message, /stopped at once \(abort\): this job is left to its lease/);
  const info = await queue.get('abandoned');
  assert.deepEqual([info.state, info.attempts], ['active', 1]);
});

test('run(): the first SIGINT shuts down gracefully and says so on stderr; a second one stops at once', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  const { child, done } = startChild('run-endless', queue, prefix);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  await waitFor(() => child.out().includes('handling endless'), 'the child to take the job');
  child.kill('SIGINT');
  await sleep(600);
  assert.equal(child.exitCode, null, 'still waiting for the handler');
  // The first signal prints exactly one line (the core adds one when the grace period is over
  // and the handler is still running).
  const first = stderr.split('\n').filter((l) => l.startsWith('tideq: SIGINT'));
  assert.deepEqual(first, [
    'tideq: SIGINT received: shutting down gracefully, waiting up to 100 ms for 1 running job; press Ctrl-C again (or send SIGINT again) to stop at once',
  ]);
  child.kill('SIGINT');
  const res = await done;
  assert.equal(res.code, 0, `exit ${res.code} ${res.signal}; stderr: ${res.stderr}`);
  assert.deepEqual(res.stderr.split('\n').filter((l) => l.startsWith('tideq: SIGINT')).slice(1), ['tideq: SIGINT received again: stopping at once']);
  assert.deepEqual(statsLine(res.stdout), { completed: 0, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  assert.equal((await queue.get('endless')).state, 'active', 'left to its lease');
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  test(`run() shuts down gracefully on ${signal}, waiting for the running job, and resolves with stats`, async () => {
    const { queue, prefix } = freshJobQueue(redis.url, fast);
    const { child, done } = startChild('run', queue, prefix);
    await waitFor(() => child.out().includes('handling signalled'), 'the child to take the job');
    child.kill(signal);
    const res = await done;
    assert.equal(res.code, 0, `exit ${res.code} ${res.signal}; stderr: ${res.stderr}`);
    const out = res.stdout.trim().split('\n');
    assert.ok(out.indexOf('handled') >= 0 && out.indexOf('handled') < out.length - 1, res.stdout);
    assert.deepEqual(statsLine(res.stdout), { completed: 1, failed: 0, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
    // Exactly one line on stderr: the handler finishes within the grace period.
    const err = res.stderr.split('\n').filter(Boolean);
    assert.equal(err.length, 1, res.stderr);
    assert.match(err[0], new RegExp(`^tideq: ${signal} received: shutting down gracefully, waiting up to 5000 ms for 1 running job;`));
    assert.equal((await queue.get('signalled')).state, 'completed');
  });
}

test('a thrown or rejected error is reported to onError and stored as "name: message"', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  class PaymentError extends Error {
    name = 'PaymentError';
  }
  const thrown = {
    sync: new TypeError('x is undefined'),
    async: new PaymentError('card declined'),
    plain: 'a plain string',
  };
  await queue.enqueueMany(Object.keys(thrown).map((id) => ({ payload: Buffer.from(id), id, maxAttempts: 1 })));
  const reported = [];
  await queue
    .work(
      (job) => {
        if (job.id === 'sync') throw thrown.sync;
        return Promise.reject(thrown[job.id]);
      },
      { ...drained, onError: (err, job) => reported.push([job.id, err, job]) },
    )
    .join();
  assert.equal(reported.length, 3);
  for (const [id, err, job] of reported) {
    assert.equal(err, thrown[id], `onError gets the very value the handler threw (${id})`);
    assert.ok(job instanceof tideq.Job);
    assert.equal(job.text(), id);
  }
  assert.equal((await queue.get('sync')).lastError, 'TypeError: x is undefined');
  assert.equal((await queue.get('async')).lastError, 'PaymentError: card declined');
  assert.equal((await queue.get('plain')).lastError, 'a plain string');
});

test('without onError a handler failure is printed with console.error, stack included', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  const res = await startChild('throws', queue, prefix).done;
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(statsLine(res.stdout), { completed: 0, failed: 1, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  assert.match(res.stderr, /tideq: handler failed on job "broken" of queue ".*" \(attempt 1 of 1\)/);
  assert.match(res.stderr, /Error: boom from the handler/);
  assert.match(res.stderr, /at brokenHandler .*job_child\.mjs/);
  assert.equal((await queue.get('broken')).lastError, 'Error: boom from the handler');
});

test("a worker's outage is printed on stderr once when it starts (then once a minute), not per retry; TIDEQ_LOG=off silences it", async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  const url = `redis://127.0.0.1:${await freePort()}`;
  const res = await startChild('unreachable', queue, prefix, { url }).done;
  assert.equal(res.code, 0, res.stderr);
  const stats = statsLine(res.stdout);
  assert.ok(stats.fetchErrors >= 3, `fetchErrors ${stats.fetchErrors}`);
  const failures = lines(res.stderr, 'tideq: ').filter((l) => /failed/.test(l) && /CONNECTION/.test(l));
  assert.equal(failures.length, 1, `one line for ${stats.fetchErrors} failures, not one each:\n${res.stderr}`);
  assert.match(failures[0], /^tideq: the worker of queue ".*" failed, retrying in .*once a minute until it works.*CONNECTION/);

  const quiet = await startChild('unreachable', queue, prefix, { url, env: { TIDEQ_LOG: 'off' } }).done;
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, '');
});

test('cancel(id) of a running job from another client aborts job.signal within a second and the job ends cancelled, not retried', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'long' });
  let startedAt = 0;
  let abortedAt = 0;
  let calls = 0;
  let reason;
  const reported = [];
  const worker = queue.work(
    async (job) => {
      calls += 1;
      startedAt = Date.now();
      await once(job.signal, 'abort');
      abortedAt = Date.now();
      reason = job.signal.reason;
      throw job.signal.reason;
    },
    { pollIntervalMs: 50, onError: (err) => reported.push(err) },
  );
  await waitFor(() => startedAt > 0, 'the handler to start', 5_000);
  const other = new tideq.Queue(queue.name, { client: new tideq.Client({ url: redis.url, prefix }) });
  const askedAt = Date.now();
  await other.cancel('long');
  await waitFor(() => abortedAt > 0, 'job.signal to abort', 5_000);
  assert.ok(abortedAt - askedAt < 1_000, `aborted ${abortedAt - askedAt} ms after cancel`);
  for (let i = 0; i < 60 && (await queue.get('long')) !== null; i++) await sleep(50);
  assert.equal(await queue.get('long'), null);
  const stats = await worker.shutdown();
  assert.deepEqual([stats.cancelled, stats.failed, stats.completed], [1, 0, 0]);
  const s = await queue.stats();
  assert.deepEqual([s.cancelled, s.retried, s.dead], [1, 0, 0]);
  assert.equal(calls, 1);
  assert.equal(reason.message, 'the job was cancelled');
  assert.deepEqual(reported, [], 'a handler stopping as asked is not a failure');
});

test('await using: leaving the scope shuts a worker and a consumer down (Symbol.asyncDispose)', async () => {
  const { queue } = freshJobQueue(redis.url);
  let ran = 0;
  const worker = queue.work(() => { ran += 1; }, { pollIntervalMs: 50 });
  await queue.enqueue(Buffer.from('x'));
  await waitFor(() => ran === 1, 'the job ran');
  // What `await using worker = ...` does at the end of its scope.
  await worker[Symbol.asyncDispose]();
  assert.equal(worker.running, false);
  const { queue: capped } = freshQueue(redis.url);
  const consumer = capped.consume(() => {});
  await consumer[Symbol.asyncDispose]();
  assert.equal(consumer.running, false);
});

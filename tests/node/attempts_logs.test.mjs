// A job's attempts and its log from Node (issue 43, "Attempts and logs per job"): each attempt
// with its error and the thrown error's stack, job.log lines read back with jobLogs and get, and
// the errors a log line can meet. The core keeps the rules (core/tests/attempts.rs).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';

import { inline } from 'tideq/testing';

import { ROOT, freshJobQueue, rejectsWith, sleep, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const fast = { backoff: { type: 'fixed', delayMs: 20 } };
const drained = { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} };

test('a job that failed twice then succeeded has three attempts, the failures with their stacks, and its log', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'j', maxAttempts: 5 });
  await queue.run(async (job) => {
    await job.log(`attempt ${job.attempt}`);
    if (job.attempt < 3) throw new TypeError(`bad ${job.attempt}`);
  }, drained);
  const info = await queue.get('j');
  const h = info.attemptHistory;
  assert.deepEqual(h.map((a) => [a.attempt, a.outcome]), [[1, 'failed'], [2, 'failed'], [3, 'completed']]);
  assert.equal(h[0].error, 'TypeError: bad 1');
  assert.match(h[0].trace, /^TypeError: bad 1\n\s+at /);
  assert.equal(h[2].trace, null);
  for (const a of h) assert.ok(a.startedAt <= a.endedAt && a.durationMs >= 0 && a.worker);
  assert.equal(info.startedAt, h[2].startedAt);
  assert.equal(typeof info.runMs, 'number');
  const logs = await queue.jobLogs('j');
  assert.deepEqual(logs.map((l) => [l.attempt, l.line]), [[1, 'attempt 1'], [2, 'attempt 2'], [3, 'attempt 3']]);
  assert.deepEqual(info.logs, logs);
});

test('a log line that is not a string, over 4096 bytes, or for a job gone is refused', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'a' });
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  await rejectsWith(() => job.log(42), 'INVALID_ARGUMENT', Error, /log line/);
  await rejectsWith(() => job.log('y'.repeat(4097)), 'INVALID_ARGUMENT', Error, /4096/);
  await job.log('y'.repeat(4096));
  assert.equal((await queue.jobLogs('a')).length, 1);
  await queue.cancel('a');
  await queue.fail(job, 'stopped');
  await rejectsWith(() => job.log('after'), 'JOB_NOT_FOUND');
  await rejectsWith(() => queue.jobLogs('a'), 'JOB_NOT_FOUND');
  await rejectsWith(() => queue.jobLogs('nobody'), 'JOB_NOT_FOUND');
});

test('a worker killed with SIGKILL leaves a lost attempt with its start and worker, then the next worker completes the job', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'k', maxAttempts: 3 });
  // A child worker that takes the job and hangs until it is killed.
  const code = `
    const tideq = require(${JSON.stringify(`${ROOT}/lib/index.js`)});
    const client = new tideq.Client({ url: ${JSON.stringify(redis.url)}, prefix: ${JSON.stringify(prefix)} });
    const queue = new tideq.Queue(${JSON.stringify(queue.name)}, { client });
    queue.work(async (job) => { await job.log('started'); console.log('running'); await new Promise(() => {}); }, { leaseMs: 1500 });
  `;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  // Its first lease renewal (a third of the lease in) records the attempt as running.
  for (let i = 0; !(await queue.get('k')).attemptHistory.some((a) => a.outcome === 'running'); i++) {
    assert.ok(i < 200, 'the running record within 10 s');
    await sleep(50);
  }
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  await sleep(1700);
  await queue.run(async () => {}, drained);
  const info = await queue.get('k');
  assert.equal(info.state, 'completed');
  assert.deepEqual(info.attemptHistory.map((a) => [a.attempt, a.outcome]), [[1, 'lost'], [2, 'completed']]);
  const lost = info.attemptHistory[0];
  assert.match(lost.error, /lease expired/);
  assert.ok(lost.startedAt > 0 && lost.endedAt > lost.startedAt && lost.worker, JSON.stringify(lost));
  assert.notEqual(lost.worker, info.attemptHistory[1].worker);
  assert.deepEqual(info.logs.map((l) => [l.attempt, l.line]), [[1, 'started']]);
});

test('in the inline test mode job.log records into the recorded job, without a connection', async () => {
  const mode = inline({ [`logs-inline`]: async (job) => { await job.log('one'); await job.log('two'); } });
  try {
    const queue = new tideq.Queue('logs-inline', { url: 'redis://127.0.0.1:1' });
    await queue.enqueue(Buffer.from('x'), { id: 'i' });
    const [rec] = mode.jobs({ queue: 'logs-inline' });
    assert.deepEqual(rec.logs, ['one', 'two']);
    assert.deepEqual((await queue.jobLogs('i')).map((l) => l.line), ['one', 'two']);
  } finally {
    mode.stop();
  }
});

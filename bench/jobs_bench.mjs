// Job queue throughput from Node: `node bench/jobs_bench.mjs URL N`. Prints ONE JSON line, jobs
// per second per operation:
// {"runtime":"node","enqueue_seq":..,"enqueue_many":..,"work_c1":..,"work_c10":..,"work_c100":..}
// - enqueue_seq: N/10 `enqueue` calls, each awaited before the next.
// - enqueue_many: N jobs through `enqueueMany`, 10 000 per call.
// - work_cX: N no-op jobs enqueued first, then a worker with concurrency X and stopWhenDrained;
//   jobs/s from starting the worker until join() resolves (every job completed). pollIntervalMs
//   is 10 so the drained check at the end costs at most 10 ms.
// Payload: a ~50-byte JSON object; queue defaults otherwise. Keys go under a private prefix.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Queue } = require('../lib/index.js');

const [url = process.env.TIDEQ_REDIS_URL || 'redis://127.0.0.1:6379', nArg = '10000'] = process.argv.slice(2);
const n = Number(nArg);
if (!Number.isInteger(n) || n < 10) throw new Error(`N must be an integer >= 10, got ${nArg}`);

const client = new Client({ url, prefix: `bench-node-jobs-${process.pid}` });
const payload = Buffer.from('{"user_id":123456,"task":"send_welcome_email","n":1}');
let queues = 0;
const fresh = () => new Queue(`jobs-${queues++}`, { client });
const rate = (count, t0) => Math.round(count / ((performance.now() - t0) / 1000));
const result = { runtime: 'node' };

async function fill(queue, count) {
  for (let i = 0; i < count; i += 10_000) {
    const chunk = Array.from({ length: Math.min(10_000, count - i) }, () => ({ payload }));
    await queue.enqueueMany(chunk);
  }
}

// enqueue, one awaited call after another.
const seq = Math.floor(n / 10);
let queue = fresh();
let t0 = performance.now();
for (let i = 0; i < seq; i++) await queue.enqueue(payload);
result.enqueue_seq = rate(seq, t0);

// enqueueMany, 10 000 jobs per call.
queue = fresh();
t0 = performance.now();
await fill(queue, n);
result.enqueue_many = rate(n, t0);

// A worker draining N pre-enqueued no-op jobs.
for (const concurrency of [1, 10, 100]) {
  queue = fresh();
  await fill(queue, n);
  let handled = 0;
  t0 = performance.now();
  const worker = queue.work(() => {
    handled++;
  }, { concurrency, stopWhenDrained: true, pollIntervalMs: 10 });
  const stats = await worker.join();
  result[`work_c${concurrency}`] = rate(n, t0);
  if (stats.completed !== n || handled !== n) {
    throw new Error(`work_c${concurrency}: completed ${stats.completed}, handled ${handled}, expected ${n}`);
  }
}

console.log(JSON.stringify(result));

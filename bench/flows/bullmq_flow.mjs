// Flow fan-in benchmark, BullMQ side (FlowProducer), the same work as bench/src/bin/flows.rs.
// Needs the bench-only install (bench/flows/run.py does `npm install --prefix bench/jobs`).
// Usage: node bench/flows/bullmq_flow.mjs URL N   (prints ONE JSON line)
// One parent on a queue of its own and N children on another, added with one
// FlowProducer.add(); a Worker at concurrency 100 on the children, one at concurrency 1 on the
// parent (which reads getChildrenValues()). Fields as in flows.rs; BullMQ has no sharded queues,
// so its children share one queue (one hash slot in a cluster).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../jobs/package.json'));
const { FlowProducer, Worker } = require('bullmq');
const IORedis = require('ioredis');

const [url, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 10000);
const u = new URL(url);
const connection = { host: u.hostname, port: Number(u.port || 6379) };
const stamp = process.pid;
const parentQ = `fan-parent-${stamp}`;
const kidQ = `fan-kids-${stamp}`;
const redis = new IORedis(connection);

async function calls() {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (!m || m[1].startsWith('info') || m[1].startsWith('config')) continue;
    total += Number(m[2]);
  }
  return total;
}

const before = await calls();
const flow = new FlowProducer({ connection });
const t0 = performance.now();
await flow.add({
  name: 'parent',
  queueName: parentQ,
  data: {},
  children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: kidQ, data: { i } })),
});
const enqueueMs = performance.now() - t0;

let first = null;
let last = null;
let done = 0;
let parentStart = null;
let results = 0;
let resolveParent;
const parentRan = new Promise((r) => (resolveParent = r));
const pw = new Worker(
  parentQ,
  async (job) => {
    parentStart = performance.now();
    results = Object.keys(await job.getChildrenValues()).length;
    resolveParent();
  },
  { connection, concurrency: 1 },
);
let resolveKids;
const kidsDone = new Promise((r) => (resolveKids = r));
const kw = new Worker(
  kidQ,
  async () => {
    const now = performance.now();
    first ??= now;
    last = performance.now();
  },
  { connection, concurrency: 100 },
);
kw.on('completed', () => {
  done += 1;
  if (done === n) resolveKids();
});
await kidsDone;
await parentRan;
const after = await calls();
await Promise.all([kw.close(), pw.close(), flow.close()]);
await redis.quit();
console.log(
  JSON.stringify({
    n,
    enqueue_ms: Number(enqueueMs.toFixed(1)),
    children_per_s: Math.round(n / ((last - first) / 1000)),
    last_child_to_parent_ms: Number((parentStart - last).toFixed(2)),
    calls_per_child: Number(((after - before) / n).toFixed(2)),
    parent_results: results,
  }),
);

// Job-queue bench of BullMQ (Node), the same work as tideq_node.mjs. Needs the bench-only install
// (bench/jobs/run.py does `npm install --prefix bench/jobs`).
// Usage: node bench/jobs/bullmq_node.mjs URL N   (prints ONE JSON line)
// - enqueue_seq: N/4 `await queue.add()` one after another.
// - enqueue_bulk: N jobs in one `await queue.addBulk()`.
// - work_c1/c10/c100: N jobs added first, then a Worker with that concurrency; jobs/s from the
//   first processor call to the N-th 'completed' event (emitted after moveToCompleted).
// - lateness_p50/p99/min_ms: 2 000 jobs in one addBulk, job i due at start + i * 0.5 ms (due
//   times spread evenly over one second, start ~2 s ahead) through a per-job `delay` = due - now,
//   each carrying its due ms in `job.data` (`{ due: <ms>, ... }`); Worker concurrency 100; the
//   processor reads the clock, then `job.data.due`: lateness = processor start - that job's due
//   time (ms, this machine's clock).
// - burst_p50/p99_ms: the same with all 2 000 due at one instant (benchlib.mjs describes the method).
// - work_prio_c100: as work_c100 with random priorities 1..10 (BullMQ OSS has no groups).
// - rate1000_achieved / rate1000_max_window: Worker limiter { max: 1000, duration: 1000 }, 4 000
//   jobs, concurrency 100: starts/s achieved and the most starts in a 1-s window (processedOn).
// - rss_mb after the work runs; idle: one Worker (concurrency 10) alone on the server for 5 s.
// Job options: removeOnComplete 1000 (the bound of tideq's keep_completed default); otherwise
// BullMQ's defaults (attempts 1, lockDuration 30 s, stalledInterval 30 s, drainDelay 5 s).
import { Queue, Worker } from 'bullmq';
import * as B from './benchlib.mjs';

const JOB_OPTS = { removeOnComplete: 1000 };
const { url, n } = B.usage();
const { host, port, db } = B.hostPort(url);
const connection = { host, port, db };
const diag = {};

const bulkJobs = (count, opts = JOB_OPTS) =>
  Array.from({ length: count }, () => ({ name: 'job', data: B.PAYLOAD_OBJ, opts }));

async function enqueueSeq(count) {
  const q = new Queue(B.freshName('bmq-seq'), { connection });
  await q.waitUntilReady();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await q.add('job', B.PAYLOAD_OBJ, JOB_OPTS);
  const r = B.rate(count, performance.now() - t0);
  await q.close();
  return r;
}

async function bulk(name, jobs) {
  const q = new Queue(name, { connection });
  await q.waitUntilReady();
  const t0 = performance.now();
  await q.addBulk(jobs);
  const r = B.rate(jobs.length, performance.now() - t0);
  await q.close();
  return r;
}

/** Runs a Worker until `count` jobs completed (`onJob(job)` first in each processor call);
 * returns the time of the last completion. */
async function runWorker(name, count, concurrency, onJob) {
  let done = 0;
  let end = 0;
  let finished;
  const all = new Promise((r) => { finished = r; });
  const worker = new Worker(name, async (job) => { onJob(job); }, { connection, concurrency });
  worker.on('completed', () => {
    if (++done === count) { end = performance.now(); finished(); }
  });
  worker.on('error', (e) => console.error('bullmq worker error:', e.message));
  await all;
  await worker.close();
  return end;
}

async function work(count, concurrency, jobs = bulkJobs(count), tag = `c${concurrency}`) {
  const name = B.freshName(`bmq-${tag}`);
  await bulk(name, jobs);
  const [mark, first] = B.timedFirst();
  const phase = new B.Phase(url);
  await phase.begin();
  const end = await runWorker(name, count, concurrency, mark);
  diag[tag] = await phase.end(count);
  return B.rate(count, end - first());
}

/** Random priorities 1..10 (BullMQ: 1 is the highest), the same as tideq's work_prio_c100. */
const prioJobs = (count) => Array.from({ length: count }, () => ({
  name: 'job', data: B.PAYLOAD_OBJ, opts: { ...JOB_OPTS, priority: 1 + Math.floor(Math.random() * 10) },
}));

/** A global rate limit of 1,000 starts/s (the Worker's limiter) over 4,000 jobs, concurrency 100:
 * starts/s achieved and the most starts in any 1-s window (job.processedOn, Redis-side ms). */
async function rateLimited() {
  const JOBS = 4000;
  const name = B.freshName('bmq-rate');
  await bulk(name, bulkJobs(JOBS));
  const starts = [];
  let done = 0;
  let finished;
  const all = new Promise((r) => { finished = r; });
  const worker = new Worker(name, async (job) => { starts.push(job.processedOn); },
    { connection, concurrency: 100, limiter: { max: 1000, duration: 1000 } });
  worker.on('completed', () => { if (++done === JOBS) finished(); });
  await all;
  await worker.close();
  starts.sort((a, b) => a - b);
  const span = (starts[starts.length - 1] - starts[0]) / 1000;
  let most = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (j < starts.length && starts[j] < starts[i] + 1000) j++;
    most = Math.max(most, j - i);
  }
  return { rate1000_achieved: Math.round(starts.length / Math.max(1, Math.ceil(span))), rate1000_max_window: most };
}

/** One lateness run: each job's data carries the due ms its `delay` aims at. */
async function lateness(spreadMs) {
  const name = B.freshName('bmq-late');
  const dues = B.lateDues(spreadMs);
  const q = new Queue(name, { connection });
  await q.waitUntilReady();
  // One addBulk; each job's delay is computed against the same "now".
  const now = Date.now();
  await q.addBulk(dues.map((due) => ({
    name: 'job', data: B.duePayloadObj(due), opts: { ...JOB_OPTS, delay: Math.max(0, due - now) },
  })));
  await q.close();
  const late = [];
  await runWorker(name, B.LATE_JOBS, B.LATE_CONCURRENCY, (job) => {
    const t = B.nowMs();
    late.push(t - job.data.due);
  });
  return late;
}

/** Enqueue to start (benchlib.mjs): a waiting Worker, jobs added one by one at 1 000/s. */
async function startLatency() {
  const name = B.freshName('bmq-start');
  const q = new Queue(name, { connection });
  await q.waitUntilReady();
  const got = [];
  const worker = new Worker(name, async (job) => { got.push(B.nowMs() - job.data.at); },
    { connection, concurrency: B.START_CONCURRENCY });
  await worker.waitUntilReady();
  await B.sleep(500);
  await B.paced(() => q.add('job', { at: B.nowMs(), ...B.PAYLOAD_OBJ }, JOB_OPTS));
  while (got.length < B.START_JOBS) await B.sleep(10);
  await worker.close();
  await q.close();
  return got;
}

async function idle() {
  const worker = new Worker(B.freshName('bmq-idle'), async () => {}, { connection, concurrency: B.IDLE_CONCURRENCY });
  await B.sleep(1000);
  const res = await B.measureIdle(url);
  await worker.close();
  return res;
}

const res = { runtime: 'node', lib: 'bullmq' };
res.enqueue_seq = await enqueueSeq(Math.max(1, Math.floor(n / 4)));
res.enqueue_bulk = await bulk(B.freshName('bmq-bulk'), bulkJobs(n));
for (const c of [1, 10, 100]) res[`work_c${c}`] = await work(n, c);
res.work_prio_c100 = await work(n, 100, prioJobs(n), 'prio_c100');
Object.assign(res, await rateLimited());
res.rss_mb = B.rssMb();
res.diag = diag;
Object.assign(res, B.latenessSummary(await lateness(B.LATE_SPREAD_MS)));
Object.assign(res, B.burstSummary(await lateness(0)));
Object.assign(res, B.startSummary(await startLatency()));
Object.assign(res, await idle());
B.emit(res);

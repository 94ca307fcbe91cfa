// Job-queue bench of BullMQ (Node), the same work as tideq_node.mjs. Needs the bench-only install
// (bench/jobs/run.py does `npm install --prefix bench/jobs`).
// Usage: node bench/jobs/bullmq_node.mjs URL N   (prints ONE JSON line)
// - enqueue_seq: N/4 `await queue.add()` one after another.
// - enqueue_bulk: N jobs in one `await queue.addBulk()`.
// - work_c1/c10/c100: N jobs added first, then a Worker with that concurrency; jobs/s from the
//   first processor call to the N-th 'completed' event (emitted after moveToCompleted).
// - lateness: 2 000 jobs with `delay` so they are all due ~2 s ahead; Worker concurrency 100;
//   lateness = processor start - due time (ms, this machine's clock).
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

/** Runs a Worker until `count` jobs completed; returns the time of the last completion. */
async function runWorker(name, count, concurrency, onJob) {
  let done = 0;
  let end = 0;
  let finished;
  const all = new Promise((r) => { finished = r; });
  const worker = new Worker(name, async () => { onJob(); }, { connection, concurrency });
  worker.on('completed', () => {
    if (++done === count) { end = performance.now(); finished(); }
  });
  worker.on('error', (e) => console.error('bullmq worker error:', e.message));
  await all;
  await worker.close();
  return end;
}

async function work(count, concurrency) {
  const name = B.freshName(`bmq-c${concurrency}`);
  await bulk(name, bulkJobs(count));
  const [mark, first] = B.timedFirst();
  const phase = new B.Phase(url);
  await phase.begin();
  const end = await runWorker(name, count, concurrency, mark);
  diag[`c${concurrency}`] = await phase.end(count);
  return B.rate(count, end - first());
}

async function lateness() {
  const name = B.freshName('bmq-late');
  const dueMs = Math.round(B.nowMs() + B.LATE_AHEAD_MS);
  const q = new Queue(name, { connection });
  await q.waitUntilReady();
  await q.addBulk(bulkJobs(B.LATE_JOBS, { ...JOB_OPTS, delay: Math.max(0, dueMs - Date.now()) }));
  await q.close();
  const late = [];
  await runWorker(name, B.LATE_JOBS, B.LATE_CONCURRENCY, () => late.push(B.nowMs() - dueMs));
  return B.latenessSummary(late);
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
res.rss_mb = B.rssMb();
res.diag = diag;
Object.assign(res, await lateness());
Object.assign(res, await idle());
B.emit(res);

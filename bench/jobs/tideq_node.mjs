// Job-queue bench of tideq from Node (the repo's build: ../../lib/index.js), the same work as
// bullmq_node.mjs. Usage: node bench/jobs/tideq_node.mjs URL N   (prints ONE JSON line)
// - enqueue_seq: N/4 `await queue.enqueue()` one after another.
// - enqueue_bulk: N jobs in one `await queue.enqueueMany()` (pipelined inside).
// - work_c1/c10/c100: N jobs enqueued first, then `queue.work(handler, { concurrency,
//   stopWhenDrained: true })`; jobs/s from the first handler call until `join()` resolves (every
//   job acked).
// - lateness_p50/p99/min_ms: 2 000 jobs, job i with `runAt` = start + i * 0.5 ms (due times spread
//   evenly over one second, start ~2 s ahead), each carrying its due ms in its payload
//   (`{"due": <ms>, ...}`); worker concurrency 100; the handler reads the clock, then
//   `job.json().due`: lateness = handler start - that job's due time (ms, this machine's clock;
//   tideq compares due times with Redis TIME, same host).
// - burst_p50/p99_ms: the same with all 2 000 due at one instant (benchlib.mjs describes the method).
// - rss_mb after the work runs; worker_rss_mb: the peak RSS of a process running only a worker at
//   concurrency 100 over N jobs (benchlib.mjs, workerRss); idle: one worker (concurrency 10) alone on the server for 5 s.
// Queue defaults: 5 attempts, exponential backoff, keepCompleted 1000.
import { createRequire } from 'node:module';
import * as B from './benchlib.mjs';

const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');

const { url, n } = B.usage();
const workerQueue = B.workerMode();
if (workerQueue) {
  const w = new Queue(workerQueue, { url }).work(() => {}, { concurrency: 100, stopWhenDrained: true });
  const stats = await w.join();
  if (stats.completed !== n) throw new Error(`completed ${stats.completed} of ${n}`);
  console.log(B.rssMb('VmHWM'));
  process.exit(0);
}
const diag = {};
const spec = (count, extra = {}) => Array.from({ length: count }, () => ({ payload: B.PAYLOAD, ...extra }));

async function enqueueSeq(count) {
  const q = new Queue(B.freshName('tq-node-seq'), { url });
  await q.stats(); // connect outside the timed part, as the peers' waitUntilReady
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await q.enqueue(B.PAYLOAD);
  return B.rate(count, performance.now() - t0);
}

async function bulk(q, jobs) {
  await q.stats();
  const t0 = performance.now();
  const done = await q.enqueueMany(jobs);
  if (done.length !== jobs.length) throw new Error(`enqueueMany returned ${done.length} results`);
  return B.rate(jobs.length, performance.now() - t0);
}

async function work(count, concurrency) {
  const q = new Queue(B.freshName(`tq-node-c${concurrency}`), { url });
  await bulk(q, spec(count));
  const [mark, first] = B.timedFirst();
  const phase = new B.Phase(url);
  await phase.begin();
  const w = q.work(() => { mark(); }, { concurrency, stopWhenDrained: true });
  const stats = await w.join();
  const end = performance.now();
  diag[`c${concurrency}`] = await phase.end(count);
  if (stats.completed !== count) throw new Error(`completed ${stats.completed} of ${count}`);
  return B.rate(count, end - first());
}

/** One lateness run: each job's payload carries the due ms its `runAt` says. */
async function lateness(spreadMs) {
  const q = new Queue(B.freshName('tq-node-late'), { url });
  await q.enqueueMany(B.lateDues(spreadMs).map((due) => ({ payload: B.duePayload(due), runAt: due })));
  const late = [];
  const handler = (job) => {
    const now = B.nowMs();
    late.push(now - job.json().due);
  };
  const w = q.work(handler, { concurrency: B.LATE_CONCURRENCY, stopWhenDrained: true });
  await w.join();
  if (late.length !== B.LATE_JOBS) throw new Error(`ran ${late.length} of ${B.LATE_JOBS} delayed jobs`);
  return late;
}

/** Enqueue to start (benchlib.mjs): a waiting worker, jobs enqueued one by one at 1 000/s. */
async function startLatency() {
  const q = new Queue(B.freshName('tq-node-start'), { url });
  const got = [];
  const w = q.work((job) => { got.push(B.nowMs() - job.json().at); }, { concurrency: B.START_CONCURRENCY });
  await B.sleep(500);
  await B.paced(() => q.enqueue(Buffer.from(JSON.stringify({ at: B.nowMs(), ...B.PAYLOAD_OBJ }))));
  while (got.length < B.START_JOBS) await B.sleep(10);
  await w.shutdown();
  return got;
}

async function idle() {
  const q = new Queue(B.freshName('tq-node-idle'), { url });
  const w = q.work(() => {}, { concurrency: B.IDLE_CONCURRENCY });
  await B.sleep(1000);
  const res = await B.measureIdle(url);
  await w.shutdown();
  return res;
}

// JOBS_BENCH_TRACING=1: work_c100 three times with no tracer provider, then three times once an
// OpenTelemetry SDK is set up (a BasicTracerProvider, as NodeSDK would register it, whose BatchSpanProcessor hands the spans to
// an exporter that drops them, so export I/O is not counted): each job then runs in a span.
if (process.env.JOBS_BENCH_TRACING) {
  const off = [];
  for (let i = 0; i < 3; i++) off.push(await work(n, 100));
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const { trace, context, propagation } = require('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core');
  // What a NodeSDK setup registers: a context manager and the W3C propagator.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const drop = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(drop)] });
  trace.setGlobalTracerProvider(provider);
  const on = [];
  for (let i = 0; i < 3; i++) on.push(await work(n, 100));
  await provider.shutdown();
  B.emit({ runtime: 'node', lib: 'tideq', tracing_off_c100: off, tracing_on_c100: on,
    tracing_on_vs_off: Math.round((Math.max(...on) / Math.max(...off)) * 1000) / 1000 });
  process.exit(0);
}

const res = { runtime: 'node', lib: 'tideq' };
res.enqueue_seq = await enqueueSeq(Math.max(1, Math.floor(n / 4)));
res.enqueue_bulk = await bulk(new Queue(B.freshName('tq-node-bulk'), { url }), spec(n));
for (const c of [1, 10, 100]) res[`work_c${c}`] = await work(n, c);
res.rss_mb = B.rssMb();
{
  const q = new Queue(B.freshName('tq-node-rss'), { url });
  await bulk(q, spec(n));
  res.worker_rss_mb = B.workerRss(new URL(import.meta.url).pathname, url, n, q.name);
}
res.diag = diag;
Object.assign(res, B.latenessSummary(await lateness(B.LATE_SPREAD_MS)));
Object.assign(res, B.burstSummary(await lateness(0)));
Object.assign(res, B.startSummary(await startLatency()));
Object.assign(res, await idle());
B.emit(res);

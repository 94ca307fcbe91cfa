// Child processes for worker.test.mjs: `node job_child.mjs MODE URL PREFIX QUEUE`. Each mode
// prints progress lines on stdout that the parent waits for, and its worker's stats as the last
// line (`stats {...}`) when it ends by itself.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Queue } = require('../../lib/index.js');
const [mode, url, prefix, name] = process.argv.slice(2);
const queue = new Queue(name, { client: new Client({ url, prefix }), backoff: { type: 'fixed', delayMs: 50 } });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const never = () => new Promise(() => {});

if (mode === 'hang') {
  // Handlers that never finish, short lease: the parent kills this process with SIGKILL.
  queue.work(
    (job) => {
      console.log(`handling ${job.id} ${job.attempt}`);
      return never();
    },
    { leaseMs: 1_000, concurrency: 2 },
  );
  console.log('ready');
} else if (mode === 'slow') {
  // One job, a handler taking 3 s; the parent freezes this process (SIGSTOP) meanwhile.
  const worker = queue.work(
    async (job) => {
      console.log(`handling ${job.id} ${job.attempt}`);
      await sleep(3_000);
      console.log('handled');
    },
    { leaseMs: 1_000, concurrency: 1, stopWhenDrained: true, pollIntervalMs: 100 },
  );
  console.log(`stats ${JSON.stringify(await worker.join())}`);
} else if (mode === 'shutdown') {
  // A quick job and one whose handler never settles (and ignores job.signal): shutdown() waits
  // for it past graceMs; abort() stops waiting, and the process ends by itself.
  let done = 0;
  let started = 0;
  let aborted = null;
  const worker = queue.work(
    async (job) => {
      started++;
      job.signal.addEventListener('abort', () => (aborted = job.signal.reason.message));
      if (job.id === 'endless') return never();
      done++;
    },
    { concurrency: 2, graceMs: 200 },
  );
  await queue.enqueueMany([{ payload: Buffer.from('q'), id: 'quick' }, { payload: Buffer.from('e'), id: 'endless' }]);
  while (done === 0 || started < 2) await sleep(5);
  let settled = false;
  const stopping = worker.shutdown().finally(() => (settled = true));
  await sleep(1_000);
  console.log(`after 1 s: settled ${settled}, running ${worker.running}, signal ${aborted}`);
  worker.abort();
  console.log(`stats ${JSON.stringify(await stopping)}`);
  console.log(`signal ${aborted}`);
} else if (mode === 'run-endless') {
  // run() with a handler that never settles: the first signal waits, the second stops at once.
  const stats = queue.run(
    (job) => {
      console.log(`handling ${job.id}`);
      return never();
    },
    { graceMs: 100 },
  );
  await queue.enqueue(Buffer.from('x'), { id: 'endless' });
  console.log(`stats ${JSON.stringify(await stats)}`);
} else if (mode === 'unreachable') {
  // A worker whose Redis is unreachable (the URL argument): it retries, and says so on stderr.
  const worker = queue.work(() => {}, { pollIntervalMs: 100 });
  await sleep(1_500);
  worker.abort();
  console.log(`stats ${JSON.stringify(await worker.join())}`);
} else if (mode === 'run') {
  // run() until a signal; a handler is running (slow) when the signal comes.
  const stats = queue.run(
    async (job) => {
      console.log(`handling ${job.id}`);
      await sleep(300);
      console.log('handled');
    },
    { graceMs: 5_000 },
  );
  await queue.enqueue(Buffer.from('x'), { id: 'signalled' });
  console.log('ready');
  console.log(`stats ${JSON.stringify(await stats)}`);
} else if (mode === 'throws') {
  // No onError: the failure is printed with console.error, stack included.
  await queue.enqueue(Buffer.from('x'), { id: 'broken', maxAttempts: 1 });
  const worker = queue.work(
    function brokenHandler() {
      throw new Error('boom from the handler');
    },
    { stopWhenDrained: true, pollIntervalMs: 100 },
  );
  console.log(`stats ${JSON.stringify(await worker.join())}`);
} else {
  throw new Error(`unknown mode ${mode}`);
}

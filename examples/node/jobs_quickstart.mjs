// tideq quick start (Node): a reliable job queue and a worker. Redis: $TIDEQ_REDIS_URL.
import { createRequire } from 'node:module';
const { Queue } = createRequire(import.meta.url)('../../index.js'); // in an app: require('tideq')

const emails = new Queue('quickstart-emails', { maxAttempts: 3, backoff: { type: 'exponential', baseMs: 100 } });
await emails.enqueue(JSON.stringify({ to: 'ada@example.com' }));
await emails.enqueue(JSON.stringify({ to: 'alan@example.com' }), { delayMs: 500 }); // due in 0.5 s, Redis clock
const { id } = await emails.enqueue(JSON.stringify({ to: 'grace@example.com' }), { id: `welcome-grace-${Date.now()}` });
console.log(`job ${id} is ${(await emails.get(id)).state}`); // enqueuing the same id again creates nothing

// At-least-once: a handler that throws is retried after the backoff, so handlers should be idempotent.
let smtpDown = true;
const send = async (job) => {
  const { to } = job.json();
  if (to.startsWith('grace') && smtpDown) {
    smtpDown = false;
    throw new Error(`SMTP timeout (attempt ${job.attempt})`);
  }
  console.log(`sent welcome email to ${to} (attempt ${job.attempt})`);
};
const onError = (err, job) => console.log(`job ${job.id} failed: ${err.message}`);
const worker = emails.work(send, { concurrency: 10, onError, stopWhenDrained: true, pollIntervalMs: 100 });
const stats = await worker.join(); // a long-running worker would use: await emails.run(send)
console.log(`completed ${stats.completed} jobs, ${stats.failed} failed attempt(s)`);

// Child process for events.test.mjs: `node events_child.mjs URL PREFIX QUEUE NAME IDLE_MS` reads
// the queue's events as the named reader NAME (from the start of the log the first time) and
// prints `<kind> <jobId>` for each, taking 30 ms per event like a slow consumer. With IDLE_MS
// 0 it reads until killed (`for await`); otherwise it stops once no event came for IDLE_MS,
// stores its place (`commit()`), and prints `idle`.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Queue } = require('../../lib/index.js');
const [url, prefix, queueName, name, idleMs] = process.argv.slice(2);
const queue = new Queue(queueName, { client: new Client({ url, prefix }) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const reader = queue.events({ name, fromStart: true });
if (Number(idleMs) === 0) {
  for await (const e of reader) {
    console.log(`${e.kind} ${e.jobId}`);
    await sleep(30);
  }
} else {
  for (let e; (e = await reader.next({ timeoutMs: Number(idleMs) })); ) {
    console.log(`${e.kind} ${e.jobId}`);
  }
  await reader.commit();
  await reader.close();
  console.log('idle');
}

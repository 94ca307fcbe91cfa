// Child process for schedules.test.mjs: `node schedule_child.mjs URL PREFIX QUEUE MS` runs a
// worker of the queue (which drives its schedules) for MS milliseconds, prints `ready` once it
// started, `job <id> <payload>` for each job it runs, and its stats as the last line
// (`stats {...}`).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Queue } = require('../../lib/index.js');
const [url, prefix, name, ms] = process.argv.slice(2);
const queue = new Queue(name, { client: new Client({ url, prefix }) });
const sleep = (t) => new Promise((resolve) => setTimeout(resolve, t));

const worker = queue.work((job) => void console.log(`job ${job.id} ${job.payload}`), { pollIntervalMs: 100 });
console.log('ready');
await sleep(Number(ms));
console.log(`stats ${JSON.stringify(await worker.shutdown())}`);

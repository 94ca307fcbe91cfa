// A child process for gc.test.mjs: `node --expose-gc gc_child.mjs KIND URL PREFIX QUEUE COUNT`.
// Starts a worker or consumer of KIND at the top level without keeping its handle, forces
// garbage collection until the handle's object is gone, prints `ready`, then prints one line per
// job (or item) its handler runs and `done` once it has run COUNT of them. The process must stay
// alive the whole time: the worker is owned by the binding until it is stopped.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Queue, CappedQueue } = require('../../lib/index.js');
const [kind, url, prefix, name, countText] = process.argv.slice(2);
const count = Number(countText);
const client = new Client({ url, prefix });
let seen = 0;
const saw = (what) => {
  seen++;
  console.log(`ran ${what}`);
  if (seen === count) console.log('done');
};

// Proof that the handle's object was collected: a FinalizationRegistry callback for it.
let collected = false;
const registry = new FinalizationRegistry(() => {
  collected = true;
});

function start() {
  // Nothing here keeps the handle: it is registered (weakly) and dropped on return.
  let handle;
  if (kind === 'worker') {
    handle = new Queue(name, { client }).work((job) => saw(job.id), { pollIntervalMs: 200 });
  } else if (kind === 'batch-worker') {
    handle = new Queue(name, { client }).workBatches((jobs) => jobs.forEach((j) => saw(j.id)), {
      size: 5,
      pollIntervalMs: 200,
    });
  } else if (kind === 'task-worker') {
    handle = new Queue(name, { client }).work({ greet: (data) => saw(data.n) }, { pollIntervalMs: 200 });
  } else if (kind === 'consumer') {
    handle = new CappedQueue(name, { client }).consume((group, items) => items.forEach((i) => saw(i.toString())), {
      pollIntervalMs: 200,
    });
  } else {
    throw new Error(`unknown kind ${kind}`);
  }
  registry.register(handle, kind);
}

start();
for (let i = 0; i < 50 && !collected; i++) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, 10));
}
console.log(collected ? 'ready (handle collected)' : 'ready (handle not collected)');

// The package's CommonJS entry point (hand-written, as is all of lib/; `index.mjs` re-exports it
// for `import`). `native.js` at the package root is the loader napi generates (`npm run build`
// writes it, with `index.d.ts`): it finds and loads the platform's `.node` addon (`binding.js`
// turns its failure into an error that says what to do). The exports are the addon's, as they
// are, and `outcomes.js`' classes; `otel.js` then adds OpenTelemetry to `Queue` when
// `@opentelemetry/api` is installed (and loads nothing more when it is not).
'use strict';

// `module.exports = require(...)` is a re-export Node's ESM loader sees, so
// `import { Queue } from 'tideq'` keeps working.
module.exports = require('./binding.js');
// What a job handler throws instead of failing (Error subclasses, in JS). Assigned one by one so
// Node's ESM loader sees each name.
const outcomes = require('./outcomes.js');
module.exports.Snooze = outcomes.Snooze;
module.exports.BackOff = outcomes.BackOff;
module.exports.DontRetry = outcomes.DontRetry;
module.exports.OverLimit = outcomes.OverLimit;

// Shared limiters: the native acquire resolves with the ms to wait when the limiter is over its
// limit, thrown here as `OverLimit` (a `Snooze`, so a handler that lets it through snoozes its
// job); `run` holds a slot around a function; `await using slot = ...` releases it.
{
  const { Limiter, LimitSlot } = module.exports;
  const take = Limiter.prototype.acquire;
  Object.defineProperty(Limiter.prototype, 'acquire', {
    value: async function acquire(name, cost) {
      const got = await take.call(this, name, cost);
      if (typeof got === 'number') throw new outcomes.OverLimit(name, got);
      return got;
    },
    writable: true,
    configurable: true,
  });
  Object.defineProperty(Limiter.prototype, 'run', {
    value: async function run(name, fn, cost) {
      const slot = await this.acquire(name, cost);
      try {
        return await fn();
      } finally {
        await slot.release();
      }
    },
    writable: true,
    configurable: true,
  });
  if (typeof Symbol.asyncDispose === 'symbol') {
    LimitSlot.prototype[Symbol.asyncDispose] = async function dispose() {
      await this.release();
    };
  }
}

// enqueueMany: a job given as `{ payload }` and nothing else is the same job as its bare payload,
// which the addon reads with one call instead of listing the object's keys (measured on the
// JavaScript thread: 1.7 µs a job as an object, 0.5 µs bare). Such objects are handed over as
// their payload, in a copy of the array; the caller's array is left as it is, and any other job
// (options, a task, a mistake) goes to the addon as given, which checks it.
{
  const { Queue } = module.exports;
  const many = Queue.prototype.enqueueMany;
  const bare = (jobs) => {
    let out = null;
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i];
      if (job === null || typeof job !== 'object' || ArrayBuffer.isView(job)) continue;
      const payload = job.payload;
      if (!(payload instanceof Uint8Array)) continue;
      let alone = true;
      for (const key in job) {
        if (key !== 'payload') {
          alone = false;
          break;
        }
      }
      if (!alone) continue;
      if (out === null) out = jobs.slice();
      out[i] = payload;
    }
    return out ?? jobs;
  };
  Object.defineProperty(Queue.prototype, 'enqueueMany', {
    value: function enqueueMany(jobs) {
      return many.call(this, Array.isArray(jobs) ? bare(jobs) : jobs);
    },
    writable: true,
    configurable: true,
  });
}

// Typed tasks (types only: `defineTasks` returns its argument, `queue.typed()` the queue).
const tasks = require('./tasks.js');
module.exports.defineTasks = tasks.defineTasks;
tasks.install(module.exports.Queue);

// The test modes (tideq/testing): a missed assertEnqueued is a node:assert AssertionError, as a
// failed assert in the test around it would be; `using mode = fake()` stops it at scope end.
{
  const { TestMode } = module.exports;
  const find = TestMode.prototype.assertEnqueued;
  Object.defineProperty(TestMode.prototype, 'assertEnqueued', {
    value: function assertEnqueued(filter) {
      const found = find.call(this, filter);
      if (typeof found !== 'string') return found;
      const { AssertionError } = require('node:assert');
      throw new AssertionError({ message: found, operator: 'assertEnqueued', stackStartFn: assertEnqueued });
    },
    writable: true,
    configurable: true,
  });
  if (typeof Symbol.dispose === 'symbol') {
    TestMode.prototype[Symbol.dispose] = function dispose() {
      this.stop();
    };
  }
}

// `await using worker = queue.work(...)` (explicit resource management): leaving the scope is
// `await worker.shutdown()`, as Python's `async with`.
if (typeof Symbol.asyncDispose === 'symbol') {
  for (const Handle of [module.exports.Worker, module.exports.Consumer]) {
    Handle.prototype[Symbol.asyncDispose] = async function dispose() {
      await this.shutdown();
    };
  }
}

require('./otel.js').instrument(module.exports);

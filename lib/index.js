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

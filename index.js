// The package's entry point (hand-written). `native.js` is the loader napi generates (`npm run
// build` writes it, with `index.d.ts`): it finds and loads the platform's `.node` addon. The
// exports are the addon's, as they are; `otel.js` then adds OpenTelemetry to `Queue` when
// `@opentelemetry/api` is installed (and loads nothing more when it is not).
'use strict';

// `module.exports = require(...)` is a re-export Node's ESM loader sees, so
// `import { Queue } from 'tideq'` keeps working.
module.exports = require('./native.js');

require('./otel.js').instrument(module.exports);

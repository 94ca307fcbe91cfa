#!/usr/bin/env node
// The `tideq` command of the npm package: the Rust command line (the same code as the `tideq`
// binary of `cargo install --path cli`), run from the addon. `tideq worker TARGET` starts its
// worker processes as `node [node flags] <package>/lib/worker.js TARGET ...`.
'use strict';
const { join } = require('node:path');
// The addon itself (lib/binding.js), not lib/index.js: the command needs none of the OpenTelemetry glue.
const { runCli } = require('../lib/binding.js');

const host = { child: [process.execPath, ...process.execArgv, join(__dirname, '..', 'lib', 'worker.js')] };
process.exitCode = runCli(['tideq', ...process.argv.slice(2)], host);

#!/usr/bin/env node
// The `tideq` command of the npm package: the Rust command line (the same code as the `tideq`
// binary of `cargo install --path cli`), run from the addon.
'use strict';
// The addon itself (binding.js), not index.js: the command needs none of the OpenTelemetry glue.
const { runCli } = require('../binding.js');

process.exitCode = runCli(['tideq', ...process.argv.slice(2)]);

//! The `tideq` command of the npm package (`bin/tideq.js`): the same command line as the Rust
//! binary, `tideq_cli::run_cli`, not a second implementation.
#![cfg_attr(test, allow(dead_code))]

use napi_derive::napi;

/// Runs the `tideq` operator command line on `argv` (the first item is the program name) and
/// returns its exit code; it blocks until the command ends. The package's `tideq` command
/// (`npx tideq ...`) calls it.
#[napi]
pub fn run_cli(argv: Vec<String>) -> u32 {
    u32::from(tideq_cli::run_cli(argv))
}

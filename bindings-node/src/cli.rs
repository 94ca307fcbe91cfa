//! The `tideq` command of the npm package (`bin/tideq.js`): the same command line as the Rust
//! binary, `tideq_cli::run_cli`, not a second implementation. With a host (`bin/tideq.js` gives
//! it), `tideq worker` supervises children `node <package>/lib/worker.js` (`run_cli_with_host`).
#![cfg_attr(test, allow(dead_code))]

use napi_derive::napi;

/// How `tideq worker` starts one worker child of this package.
#[napi(object, object_to_js = false)]
pub struct CliHost {
    /// The argv prefix that starts one child: `[process.execPath, '<package>/lib/worker.js']`;
    /// the target and the per-child flags follow.
    pub child: Vec<String>,
}

/// Node marks its standard input, output and error close-on-exec at startup; a child the
/// command starts with them inherited (the worker children's stdout) would start with them
/// closed, and the first file it opens would become its stdout. Cleared before `tideq worker`.
fn inherit_stdio() {
    #[cfg(unix)]
    for fd in 0..3 {
        // SAFETY: reads and sets the descriptor flags of the standard descriptors; a closed one
        // fails F_GETFD and is left alone.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            }
        }
    }
}

/// Runs the `tideq` operator command line on `argv` (the first item is the program name) and
/// returns its exit code; it blocks until the command ends. The package's `tideq` command
/// (`npx tideq ...`) calls it, with `host` so that `tideq worker` can start worker processes.
#[napi]
pub fn run_cli(argv: Vec<String>, host: Option<CliHost>) -> u32 {
    // The command listens to SIGINT/SIGTERM itself (Ctrl-C, the worker supervisor's stop).
    crate::signal::release_node_handlers();
    let code = match host {
        Some(host) => {
            inherit_stdio();
            tideq_cli::run_cli_with_host(
                argv,
                tideq_cli::Host {
                    runtime: "node",
                    child: host.child.into_iter().map(Into::into).collect(),
                },
            )
        }
        None => tideq_cli::run_cli(argv),
    };
    u32::from(code)
}

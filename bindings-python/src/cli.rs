//! The `tideq` command of the Python package (`[project.scripts]` runs `tideq._cli:main`): the
//! same command line as the Rust binary, `tideq_cli::run_cli_with_host`, not a second
//! implementation. The host tells `tideq worker` how to start one worker process: the argv
//! prefix `tideq._cli` passes (`[sys.executable, "-m", "tideq._worker"]`).

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the ``tideq`` command line on ``argv`` (the first item is the program name) and returns
/// its exit code. Blocks until the command ends (``Ctrl-C`` ends ``--watch`` and ``events``).
/// ``host_child``: the argv prefix that starts one ``tideq worker`` child (without it,
/// ``tideq worker`` says which packages run workers, as the Rust binary does).
#[pyfunction]
#[pyo3(signature = (argv, host_child=None))]
pub fn _run_cli(py: Python<'_>, argv: Vec<String>, host_child: Option<Vec<OsString>>) -> u8 {
    py.detach(|| match host_child {
        Some(child) => tideq_cli::run_cli_with_host(
            argv,
            tideq_cli::Host {
                runtime: "python",
                child,
            },
        ),
        None => tideq_cli::run_cli(argv),
    })
}

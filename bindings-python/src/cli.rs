//! The `tideq` command of the Python package (`[project.scripts]` runs `tideq._cli:main`): the
//! same command line as the Rust binary, `tideq_cli::run_cli`, not a second implementation.

use pyo3::prelude::*;

/// Runs the ``tideq`` command line on ``argv`` (the first item is the program name) and returns
/// its exit code. Blocks until the command ends (``Ctrl-C`` ends ``--watch`` and ``events``).
#[pyfunction]
pub fn _run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| tideq_cli::run_cli(argv))
}

//! The `tideq` binary: the command line of the `tideq_cli` library (which the Python and Node
//! packages also run as their `tideq` command).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(tideq_cli::run_cli(std::env::args_os()))
}

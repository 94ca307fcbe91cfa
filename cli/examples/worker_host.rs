//! The `tideq` command line with a test host whose children are the `worker_child` example (the
//! supervisor's tests run `tideq worker` through it without Python or Node). Not a user-facing
//! program.

fn main() -> std::process::ExitCode {
    let exe = std::env::current_exe().expect("own path");
    let child = exe.with_file_name("worker_child");
    let host = tideq_cli::Host {
        runtime: "test",
        child: vec![child.into_os_string()],
    };
    std::process::ExitCode::from(tideq_cli::run_cli_with_host(std::env::args_os(), host))
}

//! How a command ends: its output, or why it failed and so the exit code (0 ok, 1 a
//! Redis/connection/auth error, 2 a usage error or bad input (`INVALID_ARGUMENT`, a job in a state
//! the command does not apply to), 3 not found).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use tideq::ErrorKind;

/// Why the command failed, and so its exit code.
pub(crate) enum Failure {
    /// An error of the core (its kind decides the code).
    Tideq(tideq::Error),
    /// Bad input found here (2).
    Usage(String),
    /// Nothing with that id (3).
    NotFound(String),
}

impl From<tideq::Error> for Failure {
    fn from(e: tideq::Error) -> Self {
        Failure::Tideq(e)
    }
}

impl Failure {
    pub(crate) fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::NotFound(_) => 3,
            Failure::Tideq(e) => match e.kind() {
                // A job not in a state the command applies to is bad input too.
                ErrorKind::InvalidArgument
                | ErrorKind::PayloadTooLarge
                | ErrorKind::JobWrongState
                | ErrorKind::JobNotCancellable => 2,
                ErrorKind::JobNotFound => 3,
                _ => 1,
            },
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Tideq(e) => write!(f, "{e}"),
            Failure::Usage(m) | Failure::NotFound(m) => f.write_str(m),
        }
    }
}

pub(crate) type Outcome = Result<(), Failure>;

/// Set once stdout is found closed (`tideq jobs Q | head -1`): the command writes nothing more,
/// ends (loops check [`stdout_closed`]) and exits 0 without a message, as `cat` and `grep` do.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// A command's output: `text` and a newline on stdout (nothing once stdout is closed).
pub(crate) fn print(text: &str) {
    write_out(format_args!("{text}\n"));
}

/// A page of a listing on stdout, then (text output only) where the next page starts on stderr:
/// piped output holds only the page, and the hint pastes into a shell as printed.
pub(crate) fn print_page(text: &str, cursor: &Option<String>, json: bool) {
    print(text);
    // A reader that went away (`| head -1`) needs no next page.
    if !json && !stdout_closed() {
        if let Some(hint) = crate::render::next_page(cursor) {
            eprintln!("{hint}");
        }
    }
}

/// Writes to stdout and flushes; a closed pipe is remembered, any other write error ignored
/// (there is nowhere left to report it).
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    if stdout_closed() {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
}

/// Whether a reader closed stdout: loops (`--watch`, `events --follow`) stop.
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

pub(crate) fn not_found(queue: &str, id: &str) -> Failure {
    Failure::NotFound(format!("no job {id:?} in queue {queue:?}"))
}

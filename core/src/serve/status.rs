//! The status lines a serving process writes to its supervisor (`TIDEQ_SUPERVISOR_FD`).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// The fd named by the environment is used by the first `serve` of the process only (it closes
/// it when it returns: the supervisor then sees the end of the pipe).
static ENV_FD_USED: AtomicBool = AtomicBool::new(false);

/// Where status lines go: nowhere, or the supervisor's pipe.
pub(super) struct Status {
    #[cfg(unix)]
    out: Option<std::fs::File>,
}

impl Status {
    /// `fd`, else the one `TIDEQ_SUPERVISOR_FD` names, else none.
    pub fn open(fd: Option<i32>) -> Result<Status> {
        let fd = match fd {
            Some(fd) => Some(fd),
            None => match std::env::var(super::SUPERVISOR_FD_ENV) {
                Ok(v) if !ENV_FD_USED.swap(true, Ordering::SeqCst) => Some(
                    v.trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|fd| *fd >= 0)
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "{} is {v:?}; expected a file descriptor number",
                                super::SUPERVISOR_FD_ENV
                            ))
                        })?,
                ),
                _ => None,
            },
        };
        Self::from_fd(fd)
    }

    #[cfg(unix)]
    fn from_fd(fd: Option<i32>) -> Result<Status> {
        use std::os::fd::FromRawFd;
        let Some(fd) = fd else {
            return Ok(Status { out: None });
        };
        // SAFETY: fcntl on a number we were given; a closed fd fails with EBADF.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(Error::invalid(format!(
                "the supervisor's status fd {fd} is not open: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: as above. Non-blocking: a supervisor that stops reading costs dropped lines,
        // never a stuck worker; close-on-exec: a handler's subprocesses do not keep it open.
        unsafe {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        ignore_sigpipe();
        // SAFETY: the fd is open and handed to us to own (the supervisor gave it to this process
        // for these lines); it is closed when `serve` returns.
        let out = unsafe { std::fs::File::from_raw_fd(fd) };
        Ok(Status { out: Some(out) })
    }

    #[cfg(not(unix))]
    fn from_fd(fd: Option<i32>) -> Result<Status> {
        if fd.is_some() {
            log::warn!("tideq: status lines to a supervisor are written on Unix only");
        }
        Ok(Status {})
    }

    /// Writes one line; false when the supervisor is gone (the write failed but for a full
    /// pipe, whose line is dropped).
    pub fn line(&mut self, line: &str) -> bool {
        #[cfg(unix)]
        if let Some(out) = &mut self.out {
            use std::io::Write;
            return match out.write(line.as_bytes()) {
                Ok(_) => true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    out.write(line.as_bytes()).is_ok()
                }
                Err(_) => {
                    self.out = None;
                    false
                }
            };
        }
        let _ = line;
        true
    }
}

/// A write to a pipe whose reader is gone raises SIGPIPE, which kills the process by default:
/// ignore it (only if nobody chose otherwise), so the write fails with EPIPE instead and the
/// workers stop gracefully. Python, Node and Rust programs ignore it already.
#[cfg(unix)]
fn ignore_sigpipe() {
    // SAFETY: reads the disposition, and replaces it only when it is the default.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_DFL
        {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}

//! One worker child: started with the status pipe as fd 3 in its own process group, its status
//! lines and its exit sent to the supervisor's loop, its stderr passed through (the last lines
//! kept, to print when it fails at start).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::UnboundedSender;

/// The fd a child reads its status pipe's write end from (the contract: TIDEQ_SUPERVISOR_FD=3).
const CHILD_FD: i32 = 3;

/// Lines of a child's stderr kept for the failure message.
const TAIL_LINES: usize = 20;

/// What a child's tasks tell the supervisor's loop.
pub(crate) enum Event {
    /// A status line (`ready 1 jobs 12`, `recycling jobs 100`), without its newline.
    Line(u64, String),
    /// The child exited; the last lines of its stderr.
    Exit(u64, ExitStatus, String),
}

/// A started child.
pub(crate) struct Started {
    pub pid: u32,
}

/// A pipe whose both ends are close-on-exec.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both fds on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Starts child `id` as `argv` (program and arguments); its tasks send `Event`s to `events`.
pub(crate) fn spawn(
    id: u64,
    argv: &[OsString],
    events: UnboundedSender<Event>,
) -> std::io::Result<Started> {
    let (read, write) = pipe()?;
    let wfd = write.as_raw_fd();
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env(tideq::SUPERVISOR_FD_ENV, CHILD_FD.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if wfd == CHILD_FD {
                let flags = libc::fcntl(wfd, libc::F_GETFD);
                libc::fcntl(wfd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            } else if libc::dup2(wfd, CHILD_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(write);
    let pid = child.id().unwrap_or(0);
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    // Status lines.
    let status = tokio::net::unix::pipe::Receiver::from_owned_fd(read)?;
    let tx = events.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(status).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            if tx.send(Event::Line(id, l)).is_err() {
                break;
            }
        }
    });
    // Stderr: passed through, the last lines kept.
    let stderr = child.stderr.take();
    let t = tail.clone();
    let passing = tokio::spawn(async move {
        let Some(stderr) = stderr else { return };
        let mut r = BufReader::new(stderr);
        let mut out = tokio::io::stderr();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let _ = out.write_all(&buf).await;
                    let mut t = t.lock().unwrap();
                    if t.len() == TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(String::from_utf8_lossy(&buf).trim_end().to_string());
                }
            }
        }
    });
    tokio::spawn(async move {
        let status = child.wait().await;
        // The rest of its stderr (a grandchild holding it open is not waited for long).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), passing).await;
        let tail: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
        if let Ok(status) = status {
            let _ = events.send(Event::Exit(id, status, tail.join("\n")));
        }
    });
    Ok(Started { pid })
}

/// Sends `sig` to the child `pid`.
pub(crate) fn signal(pid: u32, sig: i32) {
    if pid > 0 {
        // SAFETY: a signal to a pid of ours (a child not yet reaped keeps its pid).
        unsafe {
            libc::kill(pid as i32, sig);
        }
    }
}

/// Sends `sig` to the child's whole process group (its own subprocesses too).
pub(crate) fn signal_group(pid: u32, sig: i32) {
    if pid > 0 {
        // SAFETY: as above; the child leads its own group.
        unsafe {
            libc::kill(-(pid as i32), sig);
        }
    }
}

/// The child's resident memory in bytes (Linux: /proc/<pid>/statm), if it can be read.
pub(crate) fn rss(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(1) as u64)
}

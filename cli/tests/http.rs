//! The HTTP server of `tideq dashboard` and `tideq exporter` (`cli/src/http.rs`) under abuse:
//! connections that open and never finish their request head.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::dashboard::http;
use common::*;

/// Idle connections opened against each server: more than the 1024 file descriptors the server
/// runs with (a common default soft limit).
const IDLE: usize = 1100;

/// Lets this process open the idle connections (its soft limit up to the hard one).
fn raise_fd_limit() {
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        l.rlim_cur = l.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &l), 0);
        assert!(
            l.rlim_cur as usize > 2 * IDLE + 200,
            "this test needs {} file descriptors; the hard limit is {}",
            2 * IDLE + 200,
            l.rlim_cur
        );
    }
}

/// `tideq --url URL <args>` with at most 1024 open files, killed on drop.
struct Server(Child);

impl Server {
    fn start(url: &str, args: &[&str]) -> Self {
        let child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -n 1024 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_tideq"))
            .args(["--url", url])
            .args(args)
            .env_remove("TIDEQ_REDIS_URL")
            .env_remove("TIDEQ_DASHBOARD_TOKEN")
            .env_remove("TIDEQ_DASHBOARD_READ_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `port` answers `path` with 200.
fn wait_up(port: u16, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while http(port, "GET", path, &[]).map(|r| r.status).ok() != Some(200) {
        assert!(Instant::now() < deadline, "nothing answers on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Opens [`IDLE`] connections that send a request line and a header but never the blank line
/// that ends the head; checks that a normal request is answered meanwhile, and that every idle
/// connection is closed by the server (at once to make room, or after its header timeout).
fn idle_heads_do_not_keep_requests_out(port: u16, path: &str) {
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        // Refused or reset: the server is free to turn a connection away at the cap.
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
            continue;
        };
        let _ = write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
        idle.push(s);
    }
    // Before: the server ran out of file descriptors and this request waited until given up.
    let asked = Instant::now();
    let r = http(port, "GET", path, &[]).expect("a request while idle connections are open");
    assert_eq!(r.status, 200, "{}", r.body);
    eprintln!(
        "{path}: answered in {:?} with {IDLE} idle connections open",
        asked.elapsed()
    );
    // Every idle connection ends (EOF or reset), none answered: the 10 s header timeout, with
    // room for a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (closed, mut s) in idle.into_iter().enumerate() {
        let mut buf = [0u8; 256];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "{closed} of {IDLE} idle connections closed"
            );
            s.set_read_timeout(Some(left)).unwrap();
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // hyper may answer a timed-out head with 408 before closing.
                    let text = String::from_utf8_lossy(&buf[..n]);
                    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                Err(e) => panic!("{closed} of {IDLE} idle connections closed: {e}"),
            }
        }
    }
    // Still serving.
    assert_eq!(http(port, "GET", path, &[]).unwrap().status, 200);
}

#[test]
fn idle_connections_that_never_finish_their_headers_do_not_take_the_dashboard_offline() {
    raise_fd_limit();
    let redis = Redis::start();
    let port = free_port();
    let _d = Server::start(
        &redis.url,
        &["dashboard", "--listen", &format!("127.0.0.1:{port}")],
    );
    wait_up(port, "/api/overview");
    idle_heads_do_not_keep_requests_out(port, "/api/overview");
}

#[test]
fn idle_connections_that_never_finish_their_headers_do_not_take_the_exporter_offline() {
    raise_fd_limit();
    let redis = Redis::start();
    let port = free_port();
    let _e = Server::start(
        &redis.url,
        &["exporter", "--listen", &format!("127.0.0.1:{port}")],
    );
    wait_up(port, "/metrics");
    idle_heads_do_not_keep_requests_out(port, "/metrics");
}

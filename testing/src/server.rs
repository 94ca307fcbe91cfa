//! One private `redis-server` on a loopback port, in its own temp dir, with its log kept there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, unique};

pub struct RedisServer {
    /// The port (0 for a server this harness did not start, see [`RedisServer::start`]).
    pub port: u16,
    pub url: String,
    child: Option<Child>,
    dir: PathBuf,
    extra: Vec<String>,
    /// Serves TLS only, with the certificates in this folder (see [`make_certs`]).
    tls: Option<PathBuf>,
    /// Serves a unix socket in its folder only (no TCP port), see [`RedisServer::start_unix`].
    unix: bool,
}

impl RedisServer {
    /// A private server, or the shared one named by `TIDEQ_TEST_REDIS_URL`.
    pub fn start() -> Self {
        if let Ok(url) = std::env::var("TIDEQ_TEST_REDIS_URL") {
            return Self::external(url);
        }
        Self::start_private(free_port(), &[])
    }

    /// For the examples and the benchmarks: the server at `TIDEQ_REDIS_URL` when set (port 0),
    /// otherwise a private one, said on stderr.
    pub fn from_env_or_start() -> Self {
        match std::env::var("TIDEQ_REDIS_URL") {
            Ok(url) if !url.is_empty() => Self::external(url),
            _ => Self::start_announced(),
        }
    }

    /// A private server, said on stderr (for the benchmarks that always want their own).
    pub fn start_announced() -> Self {
        let server = Self::start_private(free_port(), &[]);
        eprintln!("started a private redis-server at {}", server.url);
        server
    }

    fn external(url: String) -> Self {
        RedisServer {
            port: 0,
            url,
            child: None,
            dir: PathBuf::new(),
            extra: Vec::new(),
            tls: None,
            unix: false,
        }
    }

    /// Always a private server on `port` (for tests that restart or reconfigure it), with
    /// `extra` redis-server arguments (`--requirepass pw`, `--maxmemory-policy noeviction`...).
    pub fn start_private(port: u16, extra: &[&str]) -> Self {
        Self::start_with(port, extra, None)
    }

    /// A private server on `port` speaking TLS only (`rediss://`), with the certificates of
    /// `certs` (see [`make_certs`]) and no client certificate asked for.
    pub fn start_tls(port: u16, certs: &Path, extra: &[&str]) -> Self {
        Self::start_with(port, extra, Some(certs))
    }

    fn start_with(port: u16, extra: &[&str], tls: Option<&Path>) -> Self {
        let dir = std::env::temp_dir().join(unique("tideq-redis"));
        std::fs::create_dir_all(&dir).unwrap();
        let scheme = if tls.is_some() { "rediss" } else { "redis" };
        let mut server = RedisServer {
            port,
            url: format!("{scheme}://127.0.0.1:{port}"),
            child: None,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            tls: tls.map(Path::to_path_buf),
            unix: false,
        };
        server.spawn();
        server
    }

    /// A private server listening on a unix socket in its own folder only (`url` is
    /// `unix:///…/redis.sock`, `port` 0). For tests that stop and restart it: while it is down,
    /// no other process can take its address, as one can take a free TCP port.
    pub fn start_unix(extra: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(unique("tideq-redis"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            port: 0,
            url: format!("unix://{}", dir.join("redis.sock").display()),
            child: None,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            tls: None,
            unix: true,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("redis.log")).unwrap();
        let port = self.port.to_string();
        let socket = self.dir.join("redis.sock");
        let mut cmd = Command::new("redis-server");
        match &self.tls {
            None if self.unix => cmd
                .args(["--port", "0", "--unixsocketperm", "700", "--unixsocket"])
                .arg(&socket),
            None => cmd.args(["--port", &port]),
            Some(certs) => {
                let file = |name: &str| certs.join(name).to_str().unwrap().to_string();
                cmd.args(["--port", "0", "--tls-port", &port])
                    .args(["--tls-cert-file", &file("cert.pem")])
                    .args(["--tls-key-file", &file("key.pem")])
                    .args(["--tls-ca-cert-file", &file("ca.pem")])
                    .args(["--tls-auth-clients", "no"])
            }
        };
        let child = cmd
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", self.dir.to_str().unwrap()])
            .args(&self.extra)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("could not start redis-server: it must be installed and on PATH (in the tideq repository: scripts/ensure-deps.sh)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Up: a PING is answered (or refused for want of a password, `--requirepass`); a TLS
    /// server is up when its port accepts connections.
    fn answers(&self) -> bool {
        if self.tls.is_some() {
            return std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
        }
        let Ok(mut c) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
        else {
            return false;
        };
        match redis::cmd("PING").query::<String>(&mut c) {
            Ok(_) => true,
            Err(e) => e.code() == Some("NOAUTH"),
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// The server's folder (its data and `redis.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// A plain synchronous connection for assertions.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if std::thread::panicking() && self.child.is_some() {
            eprintln!("--- redis-server log ---\n{}", self.log());
        }
        self.stop();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Why TLS tests cannot run here, when the test command found the redis-server on PATH built
/// without TLS (`TIDEQ_TEST_NO_TLS`, set by scripts/test-valkey.sh): the TLS tests then say so
/// and return.
pub fn tls_unavailable() -> Option<String> {
    let why = std::env::var("TIDEQ_TEST_NO_TLS")
        .ok()
        .filter(|w| !w.is_empty())?;
    eprintln!("skipped: {why}");
    Some(why)
}

/// A private CA and a server certificate it signed for 127.0.0.1, in a new folder:
/// ca.pem, cert.pem, key.pem.
pub fn make_certs() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("tideq-certs"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    for args in [
        "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tideq-test-ca -keyout ca.key -out ca.pem",
        "req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem -out server.csr",
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out cert.pem -extfile ext.cnf",
    ] {
        let ok = Command::new("openssl")
            .args(args.split(' '))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl");
        assert!(ok.success(), "openssl {args}");
    }
    dir
}

//! For the demo and the bench: use `TIDEQ_REDIS_URL` when set, otherwise start a private
//! `redis-server` on a free loopback port in a temp dir and stop it on drop.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    pub url: String,
    pub port: Option<u16>,
    child: Option<Child>,
    dir: Option<std::path::PathBuf>,
}

impl Redis {
    pub fn from_env_or_spawn() -> Redis {
        match std::env::var("TIDEQ_REDIS_URL") {
            Ok(url) if !url.is_empty() => Redis {
                url,
                port: None,
                child: None,
                dir: None,
            },
            _ => Redis::spawn(),
        }
    }

    pub fn spawn() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("tideq-demo-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--dir", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server not found: run scripts/ensure-redis.sh or set TIDEQ_REDIS_URL");
        let url = format!("redis://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("started a private redis-server at {url}");
        Redis {
            url,
            port: Some(port),
            child: Some(child),
            dir: Some(dir),
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

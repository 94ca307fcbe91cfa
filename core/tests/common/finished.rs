//! Jobs finished in a known state by id, and reads of what Redis holds, for the bulk action and
//! obliterate tests.

use std::time::Duration;

use tideq::{EnqueueOptions, JobState, Queue};

use super::jobs::id;
use super::RedisServer;

pub const LONG: Duration = Duration::from_secs(60);

pub fn once(s: &str) -> EnqueueOptions {
    EnqueueOptions {
        max_attempts: Some(1),
        ..id(s)
    }
}

/// Every key of the server with its type and a digest of its content.
pub fn snapshot(server: &RedisServer) -> Vec<(String, String)> {
    let mut c = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap();
            (k, format!("{:?}", dump.map(|d| d.len())))
        })
        .collect()
}

pub fn keys_matching(server: &RedisServer, pattern: &str) -> Vec<String> {
    let mut c = server.conn();
    let mut out = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(&mut c)
            .unwrap();
        out.extend(keys);
        cursor = next;
        if cursor == 0 {
            return out;
        }
    }
}

/// Dead jobs `names` (one attempt each, failed).
pub async fn kill(q: &Queue, names: &[&str]) {
    for n in names {
        q.enqueue(b"x", once(n)).await.unwrap();
        let job = q.lease_jobs(1, LONG).await.unwrap().remove(0);
        assert!(q.fail(&job, "boom").await.unwrap());
    }
}

/// Completed jobs `names`.
pub async fn finish(q: &Queue, names: &[&str]) {
    for n in names {
        q.enqueue(b"x", id(n)).await.unwrap();
        let job = q.lease_jobs(1, LONG).await.unwrap().remove(0);
        q.complete(&job).await.unwrap();
    }
}

pub async fn state(q: &Queue, id: &str) -> Option<JobState> {
    q.get(id).await.unwrap().map(|j| j.state)
}

pub fn later(s: &str) -> EnqueueOptions {
    EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..id(s)
    }
}

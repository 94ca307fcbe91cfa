//! Helpers of the results tests (results_store, results_wait).

use std::time::Duration;

use super::jobs::{drained, id};
use super::RedisServer;
use tideq::{Backoff, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

pub fn opts(keep_completed: usize) -> QueueOptions {
    QueueOptions {
        backoff: Backoff::fixed(10),
        keep_completed,
        ..Default::default()
    }
}

pub fn one_attempt(s: &str) -> EnqueueOptions {
    EnqueueOptions {
        max_attempts: Some(1),
        ..id(s)
    }
}

/// Runs every job of `q` with `handler` until the queue is drained.
pub async fn drain<F, Fut, R>(q: &Queue, handler: F)
where
    F: Fn(Job) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<R, String>> + Send + 'static,
    R: tideq::IntoJobResult + 'static,
{
    let w = q.work(drained(), handler).unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
}

/// Every key of the queue's hash tag, with the field count of the hashes among them.
pub fn keys_of(server: &RedisServer, q: &Queue) -> Vec<(String, i64)> {
    let mut c = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{{{}}}*", q.name()))
        .query(&mut c)
        .unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let kind: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
            let n: i64 = match kind.as_str() {
                "hash" => redis::cmd("HLEN").arg(&k).query(&mut c).unwrap(),
                _ => -1,
            };
            (k.rsplit(':').next().unwrap().to_string(), n)
        })
        .collect()
}

pub fn hlen(server: &RedisServer, q: &Queue, kind: &str) -> i64 {
    keys_of(server, q)
        .into_iter()
        .find(|(k, _)| k == kind)
        .map_or(0, |(_, n)| n)
}

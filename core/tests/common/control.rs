//! Helpers of the queue-control tests (control_order, control_limits, control_pause, control_workers).

use std::time::Duration;

use tideq::{EnqueueOptions, Queue};

pub fn prio(p: u32) -> EnqueueOptions {
    EnqueueOptions {
        priority: Some(p),
        ..Default::default()
    }
}

pub fn group(g: &str) -> EnqueueOptions {
    EnqueueOptions {
        group: Some(g.into()),
        ..Default::default()
    }
}

pub async fn lease_all(q: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let jobs = q.lease_jobs(100, Duration::from_secs(30)).await.unwrap();
        if jobs.is_empty() {
            return out;
        }
        for j in jobs {
            q.complete(&j).await.unwrap();
            out.push(String::from_utf8(j.payload).unwrap());
        }
    }
}

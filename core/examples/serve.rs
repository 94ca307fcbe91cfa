//! A worker process in Rust: two queues, each with its own concurrency, run by `tideq::serve`
//! until SIGTERM or Ctrl-C, with /livez and /readyz on 127.0.0.1:8080 and recycling after
//! 10,000 jobs (docs/workers.md, "Rust").
//!
//! ```sh
//! TIDEQ_REDIS_URL=redis://127.0.0.1:6379 cargo run -p tideq --example serve
//! ```

use std::time::Duration;

use tideq::{Client, Job, Queue, ServeOptions, WorkerOptions};

fn main() -> tideq::Result<()> {
    let url = std::env::var("TIDEQ_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let rt = tideq::runtime_builder().build().expect("a tokio runtime");
    rt.block_on(async {
        let client = Client::open(&url)?;
        let emails = Queue::new(&client, "workers-rs-emails", Default::default())?;
        let reports = Queue::new(&client, "workers-rs-reports", Default::default())?;
        let workers = vec![
            emails.work(
                WorkerOptions {
                    concurrency: 10,
                    grace: Duration::from_secs(30),
                    ..Default::default()
                },
                |job: Job| async move {
                    println!("email {}", job.id);
                    Ok::<_, String>(())
                },
            )?,
            reports.work(
                WorkerOptions {
                    concurrency: 2,
                    grace: Duration::from_secs(30),
                    ..Default::default()
                },
                |job: Job| async move {
                    println!("report {}", job.id);
                    Ok::<_, String>(())
                },
            )?,
        ];
        let stats = tideq::serve(
            workers,
            ServeOptions {
                health: Some("127.0.0.1:8080".parse().unwrap()),
                // The process stops gracefully after 10,000 jobs: run it under a process
                // manager (systemd, Kubernetes) that starts it again.
                max_jobs: Some(10_000),
                ..Default::default()
            },
        )
        .await?;
        eprintln!("stopped: {stats:?}");
        Ok(())
    })
}

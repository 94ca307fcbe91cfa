//! Used by the cross-language tests (tests/interop). Capped queue: `interop push URL QUEUE GROUP
//! HEX...` pushes items given as hex; `interop pop URL QUEUE GROUP MAX` prints each popped item as
//! one hex line. Job queue: `interop enqueue URL QUEUE HEX...` enqueues one job per payload;
//! `interop work URL QUEUE` processes jobs until the queue is drained and prints each payload as
//! one hex line, in processing order (with TIDEQ_INTEROP_KEY="<key id>=<hex key>", the queue
//! encrypts with that key). Tasks: `interop enqueue-task URL QUEUE NAME json|msgpack
//! JSON...` enqueues one task per JSON argument value; `interop work-tasks URL QUEUE NAME` runs
//! task NAME until the queue is drained and prints each job's arguments as one JSON line. Flows:
//! `interop enqueue-flow URL QUEUE` enqueues the interop flow (a chord of `square` 1..=4 on the
//! 4-shard queue QUEUE-parts whose `sum` callback starts a chain ending in `describe`, id
//! "end"); `interop work-flow URL QUEUE` runs those tasks on both queues until "end" finished
//! and prints its result as one JSON line.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tideq::{
    CappedOptions, CappedQueue, Client, EnqueueOptions, FlowJob, Job, PayloadFormat, Queue,
    QueueOptions, Tasks, WorkerOptions,
};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [verb, url, queue, rest @ ..] = args.as_slice() {
        if verb == "enqueue" || verb == "work" {
            return jobs(verb, url, queue, rest).await;
        }
        if verb == "enqueue-task" || verb == "work-tasks" {
            return tasks(verb, url, queue, rest).await;
        }
        if verb == "enqueue-flow" || verb == "work-flow" {
            return flows(verb, url, queue).await;
        }
    }
    let [verb, url, queue, group, rest @ ..] = args.as_slice() else {
        panic!("usage: interop push|pop URL QUEUE GROUP ... | enqueue|work URL QUEUE ...");
    };
    // TIDEQ_INTEROP_KEY="<key id>=<64 hex digits>": the queue encrypts with that key.
    let opts = CappedOptions {
        encryption: interop_key()?,
        ..Default::default()
    };
    let q = CappedQueue::new(&Client::open(url)?, queue, opts)?;
    match verb.as_str() {
        "push" => {
            let items: Vec<(&str, Vec<u8>)> =
                rest.iter().map(|h| (group.as_str(), unhex(h))).collect();
            q.push_many(&items).await?;
        }
        "pop" => {
            for item in q.pop_batch(group, rest[0].parse().expect("MAX")).await? {
                println!("{}", hex(&item));
            }
        }
        _ => panic!("unknown verb {verb}"),
    }
    Ok(())
}

/// TIDEQ_INTEROP_KEY="<key id>=<64 hex digits>": the queue encrypts with that key.
fn interop_key() -> tideq::Result<Option<tideq::Encryption>> {
    match std::env::var("TIDEQ_INTEROP_KEY") {
        Ok(line) => Ok(Some(tideq::crypt::keyring_from_file_text(&line)?)),
        Err(_) => Ok(None),
    }
}

async fn jobs(verb: &str, url: &str, queue: &str, rest: &[String]) -> tideq::Result<()> {
    let opts = QueueOptions {
        encryption: interop_key()?,
        ..Default::default()
    };
    let q = Queue::new(&Client::open(url)?, queue, opts)?;
    if verb == "enqueue" {
        let jobs: Vec<(Vec<u8>, EnqueueOptions)> = rest
            .iter()
            .map(|h| (unhex(h), EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await?;
        return Ok(());
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = WorkerOptions {
        concurrency: 1,
        stop_when_drained: true,
        ..Default::default()
    };
    let w = q.work(opts, move |job: Job| {
        s2.lock().unwrap().push(job.payload.clone());
        async { Ok::<(), String>(()) }
    })?;
    w.join().await;
    for p in seen.lock().unwrap().iter() {
        println!("{}", hex(p));
    }
    Ok(())
}

async fn tasks(verb: &str, url: &str, queue: &str, rest: &[String]) -> tideq::Result<()> {
    let q = Queue::new(&Client::open(url)?, queue, QueueOptions::default())?;
    if verb == "enqueue-task" {
        let [name, format, values @ ..] = rest else {
            panic!("usage: interop enqueue-task URL QUEUE NAME json|msgpack JSON...");
        };
        let format = match format.as_str() {
            "msgpack" => PayloadFormat::Msgpack,
            _ => PayloadFormat::Json,
        };
        for v in values {
            let value: serde_json::Value = serde_json::from_str(v).expect("JSON");
            let opts = EnqueueOptions {
                format: Some(format),
                ..Default::default()
            };
            q.enqueue_task(name, &value, opts).await?;
        }
        return Ok(());
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = WorkerOptions {
        concurrency: 1,
        stop_when_drained: true,
        ..Default::default()
    };
    let tasks = Tasks::new().task(&rest[0], move |args: serde_json::Value, _job: Job| {
        s2.lock().unwrap().push(args.to_string());
        async { Ok::<(), String>(()) }
    });
    q.work_tasks(opts, tasks)?.join().await;
    for line in seen.lock().unwrap().iter() {
        println!("{line}");
    }
    Ok(())
}

async fn flows(verb: &str, url: &str, queue: &str) -> tideq::Result<()> {
    let client = Client::open(url)?;
    let q = Queue::new(&client, queue, QueueOptions::default())?;
    let parts = Queue::sharded(
        &client,
        &format!("{queue}-parts"),
        4,
        QueueOptions::default(),
    )?;
    if verb == "enqueue-flow" {
        let squares = (1..=4)
            .map(|n| Ok(FlowJob::task("square", &n)?.on(&parts)))
            .collect::<tideq::Result<Vec<_>>>()?;
        let flow = FlowJob::chain([
            FlowJob::chord(squares, FlowJob::step("sum"))?,
            FlowJob::step("describe").options(EnqueueOptions {
                id: Some("end".into()),
                ..Default::default()
            }),
        ])?;
        q.enqueue_flow(flow).await?;
        return Ok(());
    }
    let tasks = Tasks::new()
        .task("square", |n: i64, _job: Job| async move {
            Ok::<Value, String>(json!(n * n))
        })
        .task("sum", |all: Vec<i64>, _job: Job| async move {
            Ok::<Value, String>(json!(all.iter().sum::<i64>()))
        })
        .task("describe", |total: i64, _job: Job| async move {
            Ok::<Value, String>(json!({ "total": total, "runtime": "rust" }))
        });
    let workers = [
        q.work_tasks(WorkerOptions::default(), tasks.clone())?,
        parts.work_tasks(WorkerOptions::default(), tasks)?,
    ];
    let out = q
        .wait("end", Some(std::time::Duration::from_secs(30)))
        .await;
    for w in workers {
        w.shutdown().await;
    }
    let result: Value = serde_json::from_slice(&out?.result.unwrap_or_default()).expect("JSON");
    println!("{result}");
    Ok(())
}

//! Encrypted jobs in `tideq job` (issue 45, part 1): shown as "encrypted (key k1)" without a key,
//! in clear with `--key-file` or `TIDEQ_KEY_FILE`; a key file that cannot be read is refused.

mod common;

use std::time::Duration;

use common::*;
use tideq::{Client, Encryption, Job, Queue, QueueOptions, WorkerOptions};

const KEY_HEX: &str = "0101010101010101010101010101010101010101010101010101010101010101";

fn sealed_job(redis: &Redis) {
    let opts = QueueOptions {
        encryption: Some(Encryption::keyring("k1", [("k1", [1u8; 32])]).unwrap()),
        max_attempts: 1,
        ..Default::default()
    };
    let q = Queue::new(&Client::open(&redis.url).unwrap(), "vault", opts).unwrap();
    rt().block_on(async {
        q.enqueue(b"card 4242", with_id("j1")).await.unwrap();
        let worker = WorkerOptions {
            stop_when_drained: true,
            poll_interval: Duration::from_millis(50),
            ..Default::default()
        };
        q.work(worker, |job: Job| async move {
            job.log("charging card 4242")
                .await
                .map_err(|e| e.to_string())?;
            Err::<(), String>("declined card 4242".into())
        })
        .unwrap()
        .join()
        .await;
    });
}

#[test]
fn tideq_job_shows_sealed_values_by_key_id_and_opens_them_with_a_key_file() {
    let redis = Redis::start();
    sealed_job(&redis);
    let text = ok(redis.tideq(&["job", "vault", "j1"]));
    assert!(text.contains("encrypted (key k1)"), "{text}");
    assert!(!text.contains("4242"), "{text}");

    let dir = std::env::temp_dir().join(format!("tideq-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys");
    std::fs::write(&file, format!("# test key\nk1={KEY_HEX}\n")).unwrap();
    let path = file.to_str().unwrap();
    let text = ok(redis.tideq(&["job", "vault", "j1", "--key-file", path]));
    for want in ["card 4242", "declined card 4242", "charging card 4242"] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    let missing = dir.join("nope");
    let out = redis.tideq(&[
        "job",
        "vault",
        "j1",
        "--key-file",
        missing.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read key file"));
}

#[test]
fn tideq_capped_peek_shows_sealed_items_by_key_id_and_opens_them_with_a_key_file() {
    let redis = Redis::start();
    let opts = tideq::CappedOptions {
        encryption: Some(Encryption::keyring("k1", [("k1", [1u8; 32])]).unwrap()),
        ..Default::default()
    };
    let q = tideq::CappedQueue::new(&Client::open(&redis.url).unwrap(), "vault", opts).unwrap();
    rt().block_on(q.push("g", b"card 4242")).unwrap();
    let text = ok(redis.tideq(&["capped", "vault", "peek", "g"]));
    assert!(text.contains("encrypted (key k1)"), "{text}");
    assert!(!text.contains("4242"), "{text}");

    let dir = std::env::temp_dir().join(format!("tideq-ckeys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys");
    std::fs::write(&file, format!("k1={KEY_HEX}\n")).unwrap();
    let path = file.to_str().unwrap();
    let text = ok(redis.tideq(&["capped", "vault", "peek", "g", "--key-file", path]));
    assert!(text.contains("card 4242"), "{text}");
    assert_eq!(rt().block_on(q.len("g")).unwrap(), 1, "peek took nothing");
}

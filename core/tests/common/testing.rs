//! What the test-mode suites (`testing.rs`, `testing_inline.rs`) share: test modes are global to a
//! process, so each suite's tests run one at a time, on queues no Redis answers for.

use tideq::{Client, Config, EnqueueOptions, Queue, QueueOptions};

/// Held by every test of a suite for its whole run (an async mutex: a failed test does not
/// poison it).
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A queue whose URL points at a closed port: any connection attempt fails.
pub fn offline(name: &str) -> Queue {
    let url = format!("redis://127.0.0.1:{}", super::free_port());
    let client = Client::new(Config::new(url)).unwrap();
    Queue::new(&client, &super::unique(name), QueueOptions::default()).unwrap()
}

pub fn opts() -> EnqueueOptions {
    EnqueueOptions::default()
}

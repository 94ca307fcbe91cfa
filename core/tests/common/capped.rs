//! Helpers of the capped queue tests (capped_delivery, capped_groups, capped_setup).

use super::{unique, RedisServer};
use tideq::{CappedOptions, CappedQueue, Client};

pub fn queue(server: &RedisServer, opts: CappedOptions) -> CappedQueue {
    let client = Client::open(&server.url).unwrap();
    CappedQueue::new(&client, &unique("q"), opts).unwrap()
}

pub fn cap(capacity: usize) -> CappedOptions {
    CappedOptions {
        capacity,
        ..Default::default()
    }
}

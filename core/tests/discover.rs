//! Queue discovery: `Client::queues` lists the queues of both kinds under the client's prefix
//! (sharded ones once, with their shard count), and nothing under another prefix. Against a real
//! redis-server (the cluster case is in cluster.rs).

mod common;

use common::RedisServer;
use tideq::{CappedOptions, CappedQueue, Client, Config, Queue, QueueKind, QueueOptions, QueueRef};

#[tokio::test]
async fn queues_lists_job_and_capped_queues_under_the_prefix_with_their_shards() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let jobs = Queue::new(&client, "emails", QueueOptions::default()).unwrap();
    jobs.enqueue(b"x", Default::default()).await.unwrap();
    let sharded = Queue::sharded(&client, "clicks", 3, QueueOptions::default()).unwrap();
    for i in 0..30 {
        sharded
            .enqueue(format!("{i}"), Default::default())
            .await
            .unwrap();
    }
    let capped = CappedQueue::new(&client, "ticks", CappedOptions::default()).unwrap();
    capped.push("g", b"1").await.unwrap();
    // Another prefix is another tenant: not listed.
    let other = Client::new(Config::new(&server.url).with_prefix("other")).unwrap();
    Queue::new(&other, "hidden", QueueOptions::default())
        .unwrap()
        .enqueue(b"x", Default::default())
        .await
        .unwrap();
    let found = client.queues().await.unwrap();
    let r = |kind, name: &str, shards| QueueRef {
        kind,
        name: name.into(),
        shards,
    };
    assert_eq!(
        found,
        vec![
            r(QueueKind::Jobs, "clicks", 3),
            r(QueueKind::Jobs, "emails", 1),
            r(QueueKind::Capped, "ticks", 1),
        ]
    );
}

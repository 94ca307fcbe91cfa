//! `tideq capped` against a private `redis-server`: stats, groups, len and peek, each checked
//! through the core crate.

mod common;

use common::*;
use serde_json::Value;
use tideq::Client;

#[test]
fn capped_stats_groups_and_len_are_cores() {
    let redis = Redis::start();
    let client = Client::open(&redis.url).unwrap();
    let q = tideq::CappedQueue::new(&client, "cq", Default::default()).unwrap();
    let rt = rt();
    rt.block_on(async {
        q.push("a", b"1").await.unwrap();
        q.push("a", b"2").await.unwrap();
        q.push("b", b"3").await.unwrap();
    });
    let core = rt.block_on(q.stats()).unwrap();
    let v = json(redis.tideq(&["capped", "cq", "stats", "--json"]));
    assert_eq!(v["pushed"].as_u64(), Some(core.pushed));
    assert_eq!(v["groups"].as_u64(), Some(2));
    let groups = json(redis.tideq(&["capped", "cq", "groups", "--json"]));
    let want = rt.block_on(q.groups()).unwrap();
    assert_eq!(groups, serde_json::json!(want));
    let page = json(redis.tideq(&["capped", "cq", "groups", "--count", "5", "--json"]));
    let mut listed: Vec<String> = serde_json::from_value(page["groups"].clone()).unwrap();
    listed.sort();
    assert_eq!(
        (listed, &page["cursor"]),
        (vec!["a".to_string(), "b".to_string()], &Value::Null)
    );
    assert_eq!(ok(redis.tideq(&["capped", "cq", "len", "a"])).trim(), "2");
}

#[test]
fn capped_peek_shows_the_oldest_items_and_takes_nothing() {
    let redis = Redis::start();
    let client = Client::open(&redis.url).unwrap();
    let q = tideq::CappedQueue::new(&client, "cq", Default::default()).unwrap();
    let rt = rt();
    rt.block_on(async {
        for item in [&br#"{"n":1}"#[..], b"two", &[0xff, 0x00], b"four"] {
            q.push("g", item).await.unwrap();
        }
    });
    let v = json(redis.tideq(&["capped", "cq", "peek", "g", "--max", "3", "--json"]));
    let core = rt.block_on(q.peek("g", 3)).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 3, "{v}");
    for (shown, p) in items.iter().zip(&core) {
        assert_eq!(shown["pushed_at_ms"].as_u64(), Some(p.pushed_at_ms));
        assert_eq!(shown["item_len"].as_u64(), Some(p.item.len() as u64));
    }
    assert_eq!(items[0]["item"], serde_json::json!({"n": 1}));
    assert_eq!(items[0]["item_format"], "json");
    assert_eq!(
        (&items[1]["item"], &items[1]["item_format"]),
        (&"two".into(), &"text".into())
    );
    assert_eq!(
        (&items[2]["item"], &items[2]["item_format"]),
        (&"ff00".into(), &"hex".into())
    );
    let hex = json(redis.tideq(&["capped", "cq", "peek", "g", "--payload", "hex", "--json"]));
    assert_eq!(hex.as_array().unwrap().len(), 4, "--max defaults to 10");
    assert_eq!(hex[1]["item"], "74776f");
    let text = ok(redis.tideq(&["capped", "cq", "peek", "g"]));
    assert!(
        text.starts_with("PUSHED AT") && text.contains("four"),
        "{text}"
    );
    assert_eq!(rt.block_on(q.len("g")).unwrap(), 4, "peek took nothing");
    assert!(ok(redis.tideq(&["capped", "cq", "peek", "none"])).contains("(no items)"));
    let bad = redis.tideq(&["capped", "cq", "peek", "g", "--max", "0"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("max must be 1 to 1000"),
        "{}",
        stderr(&bad)
    );
}

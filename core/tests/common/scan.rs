//! Every byte Redis holds, to check that nothing in it holds a plaintext (the encryption tests).

use redis::Commands;

use super::RedisServer;

/// The plaintext the encryption tests look for.
pub const MARKER: &str = "PLAINTEXT-MARKER-7c1f";

/// Every byte Redis holds, key by key: names, and values read by type (and DUMP, uncompressed).
pub fn every_byte(server: &RedisServer) -> Vec<Vec<u8>> {
    let mut c = server.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdbcompression")
        .arg("no")
        .query(&mut c)
        .unwrap();
    let keys: Vec<Vec<u8>> = c.scan::<Vec<u8>>().unwrap().map(|k| k.unwrap()).collect();
    let mut out = Vec::new();
    for k in keys {
        let t: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
        let vals: Vec<Vec<u8>> = match t.as_str() {
            "string" => vec![c.get(&k).unwrap()],
            "hash" => c.hgetall::<_, Vec<Vec<u8>>>(&k).unwrap(),
            "list" => c.lrange(&k, 0, -1).unwrap(),
            "set" => c.smembers(&k).unwrap(),
            "zset" => c.zrange(&k, 0, -1).unwrap(),
            "stream" => {
                let v: redis::Value = redis::cmd("XRANGE")
                    .arg(&k)
                    .arg("-")
                    .arg("+")
                    .query(&mut c)
                    .unwrap();
                vec![format!("{v:?}").into_bytes()]
            }
            other => panic!("key of type {other}"),
        };
        let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap();
        out.push(k);
        out.extend(vals);
        out.push(dump);
    }
    out
}

pub fn holds_marker(bytes: &[Vec<u8>]) -> bool {
    bytes
        .iter()
        .any(|b| b.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()))
}

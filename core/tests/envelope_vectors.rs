//! The shared envelope test vectors (tests/vectors/envelope_v1.json): this build must decode each
//! vector's bytes to its fields and encode the fields back to the same bytes. The Python and Node
//! suites check the same file through their bindings.

use tideq::{Backoff, BackoffKind, Envelope};

fn vectors() -> Vec<serde_json::Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/envelope_v1.json"
    );
    let text = std::fs::read_to_string(path).expect("vector file");
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["vectors"]
        .as_array()
        .unwrap()
        .clone()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn from_fields(f: &serde_json::Value) -> Envelope {
    let b = &f["backoff"];
    Envelope {
        v: f["v"].as_u64().unwrap() as u8,
        id: f["id"].as_str().unwrap().into(),
        payload: unhex(f["payload_hex"].as_str().unwrap()),
        created_at: f["created_at"].as_u64().unwrap(),
        max_attempts: f["max_attempts"].as_u64().unwrap() as u32,
        backoff: Backoff {
            kind: if b["kind"] == "fixed" {
                BackoffKind::Fixed
            } else {
                BackoffKind::Exponential
            },
            base_ms: b["base_ms"].as_u64().unwrap(),
            max_ms: b["max_ms"].as_u64().unwrap(),
            jitter: b["jitter"].as_bool().unwrap(),
        },
        timeout_ms: f["timeout_ms"].as_u64(),
        task: f["task"].as_str().map(String::from),
        format: f["format"]
            .as_str()
            .map(|s| tideq::PayloadFormat::parse(s).unwrap()),
        trace: f["trace"].as_object().map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        }),
        args_from: f["args_from"].as_str().map(|s| match s {
            "previous" => tideq::ArgsFrom::Previous,
            _ => tideq::ArgsFrom::Children,
        }),
    }
}

#[test]
fn every_vector_decodes_to_its_fields_and_encodes_to_its_bytes() {
    let vs = vectors();
    assert!(vs.len() >= 4);
    for v in vs {
        let bytes = unhex(v["hex"].as_str().unwrap());
        let expected = from_fields(&v["fields"]);
        assert_eq!(Envelope::decode(&bytes).unwrap(), expected, "{}", v["name"]);
        assert_eq!(Envelope::encode(&expected), bytes, "{}", v["name"]);
    }
}

#[test]
fn an_envelope_with_fields_from_a_later_version_decodes_to_the_fields_this_one_knows() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/envelope_v1.json"
    );
    let text = std::fs::read_to_string(path).expect("vector file");
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vs = all["readers_ignore_unknown_fields"]["vectors"]
        .as_array()
        .unwrap();
    assert!(!vs.is_empty());
    for v in vs {
        let bytes = unhex(v["hex"].as_str().unwrap());
        let expected = from_fields(&v["fields"]);
        assert_eq!(Envelope::decode(&bytes).unwrap(), expected, "{}", v["name"]);
    }
}

#[test]
fn the_traced_vector_carries_a_w3c_trace_context() {
    let v = vectors()
        .into_iter()
        .find(|v| v["name"] == "traced")
        .expect("a traced vector");
    let env = Envelope::decode(&unhex(v["hex"].as_str().unwrap())).unwrap();
    let trace = env.trace.expect("trace");
    assert_eq!(
        trace["traceparent"],
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    );
    tideq::envelope::validate_trace_context(&trace).unwrap();
}

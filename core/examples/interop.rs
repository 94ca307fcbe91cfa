//! Used by the cross-language test (tests/interop): `interop push URL QUEUE GROUP HEX...` pushes
//! items given as hex; `interop pop URL QUEUE GROUP MAX` prints each popped item as one hex line.

use tideq::{CappedOptions, CappedQueue, Client};

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
    let [verb, url, queue, group, rest @ ..] = args.as_slice() else {
        panic!("usage: interop push|pop URL QUEUE GROUP ...");
    };
    let q = CappedQueue::new(&Client::open(url)?, queue, CappedOptions::default())?;
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

//! The connection the flags describe (`--url`, `--cluster`, `--sentinel`, `--tls-ca`,
//! `--prefix`, `--shards`), as the core's `Config`, client and queues.

use tideq::{Client, Config, Queue, QueueKind, QueueOptions};

use crate::args::Conn;
use crate::exit::Failure;

pub(crate) fn config(c: &Conn) -> Result<Config, Failure> {
    let mut cfg = if !c.cluster.is_empty() {
        Config::cluster(c.cluster.clone())
    } else if !c.sentinel.is_empty() {
        Config::sentinel(
            c.sentinel.clone(),
            c.master_name.clone().unwrap_or_default(),
        )
    } else {
        Config::new(c.url.clone().unwrap_or_else(Config::env_url))
    };
    if let Some(path) = &c.tls_ca {
        let pem = std::fs::read(path)
            .map_err(|e| Failure::Usage(format!("cannot read --tls-ca {}: {e}", path.display())))?;
        cfg = cfg.with_tls_ca(pem);
    }
    if let Some(p) = &c.prefix {
        cfg = cfg.with_prefix(p.clone());
    }
    Ok(cfg)
}

pub(crate) fn client(c: &Conn) -> Result<Client, Failure> {
    Ok(Client::new(config(c)?)?)
}

/// The job queue `name`, split in `--shards` or else in the count the queue recorded (1 when
/// none is: a new queue, or one last written by a tideq that did not record it).
pub(crate) async fn job_queue(c: &Conn, name: &str) -> Result<Queue, Failure> {
    let client = client(c)?;
    let shards = shards(c, &client, QueueKind::Jobs, name).await?;
    Ok(Queue::sharded(&client, name, shards, queue_options(c)?)?)
}

/// `--shards`, else the count the queue of `kind` named `name` recorded, else 1.
pub(crate) async fn shards(
    c: &Conn,
    client: &Client,
    kind: QueueKind,
    name: &str,
) -> Result<usize, Failure> {
    Ok(match c.shards {
        Some(n) => n,
        None => client.recorded_shards(kind, name).await?.unwrap_or(1),
    })
}

/// The job queue `name` for a command that reads or changes an existing queue (`pause`,
/// `limits`, `history`, `schedules`, `workers`, `events`, ...): a name no queue has (a typo) is
/// `NotFound` (exit 3), naming the queues it may have meant, and nothing is written. A queue
/// exists once its shard count is recorded (its first enqueue or schedule) or it has keys under
/// the prefix.
pub(crate) async fn existing_job_queue(c: &Conn, name: &str) -> Result<Queue, Failure> {
    let client = client(c)?;
    let shards = match client.recorded_shards(QueueKind::Jobs, name).await? {
        Some(n) => n,
        None => {
            let found = client.queues().await?;
            let of = |kind| found.iter().find(|r| r.kind == kind && r.name == name);
            match (of(QueueKind::Jobs), of(QueueKind::Capped)) {
                (Some(r), _) => r.shards,
                (None, Some(_)) => {
                    return Err(Failure::NotFound(format!(
                        "{name:?} is a capped queue: see `tideq capped {name} stats`"
                    )))
                }
                (None, None) => {
                    let names: Vec<&str> = found.iter().map(|r| r.name.as_str()).collect();
                    return Err(Failure::NotFound(format!(
                        "no job queue {name:?} here: nothing was ever enqueued to it{} \
                         (`tideq queues` lists the queues)",
                        did_you_mean(name, &names)
                    )));
                }
            }
        }
    };
    Ok(Queue::sharded(
        &client,
        name,
        c.shards.unwrap_or(shards),
        queue_options(c)?,
    )?)
}

/// The options a queue is opened with: its encryption keys from `--key-file`/`TIDEQ_KEY_FILE`.
fn queue_options(c: &Conn) -> Result<QueueOptions, Failure> {
    Ok(QueueOptions {
        encryption: encryption(c)?,
        ..Default::default()
    })
}

/// The encryption keys of `--key-file`/`TIDEQ_KEY_FILE`, if given (job and capped queues).
pub(crate) fn encryption(c: &Conn) -> Result<Option<tideq::Encryption>, Failure> {
    let Some(path) = &c.key_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read key file {}: {e}", path.display())))?;
    Ok(Some(tideq::crypt::keyring_from_file_text(&text)?))
}

/// The job queues `--queue` names for the exporter or the dashboard exist: a typo'd name is
/// `NotFound` (exit 3) before anything is served, instead of a page of zeros.
pub(crate) async fn named_queues_exist(client: &Client, named: &[String]) -> Result<(), Failure> {
    let mut found = None;
    for name in named {
        if client
            .recorded_shards(QueueKind::Jobs, name)
            .await?
            .is_some()
        {
            continue;
        }
        if found.is_none() {
            found = Some(client.queues().await?);
        }
        let all = found.as_deref().unwrap_or_default();
        if all
            .iter()
            .any(|r| r.kind == QueueKind::Jobs && &r.name == name)
        {
            continue;
        }
        let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
        return Err(Failure::NotFound(format!(
            "--queue {name:?}: no job queue of that name here{} (`tideq queues` lists the queues)",
            did_you_mean(name, &names)
        )));
    }
    Ok(())
}

/// `; did you mean "emails"?` when one of `names` is within two edits of `name`.
pub(crate) fn did_you_mean(name: &str, names: &[&str]) -> String {
    let mut close: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (edits(name, n), *n))
        .filter(|(d, _)| *d <= 2)
        .collect();
    close.sort();
    match close.first() {
        Some((_, n)) => format!("; did you mean {n:?}?"),
        None => String::new(),
    }
}

/// The Levenshtein distance between `a` and `b`, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(prev + usize::from(ca != *cb));
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_within_two_edits_is_suggested() {
        assert_eq!(edits("emials", "emails"), 2);
        assert_eq!(edits("", "ab"), 2);
        assert_eq!(
            did_you_mean("emials", &["reports", "emails"]),
            "; did you mean \"emails\"?"
        );
        assert_eq!(did_you_mean("zzz", &["emails"]), "");
    }
}

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
    Ok(Queue::sharded(
        &client,
        name,
        shards,
        QueueOptions::default(),
    )?)
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

//! The queues under the prefix (the core's `discover` role): `tideq queues`.

use crate::args::Conn;
use crate::connect::client;
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq queues`: both kinds, found with SCAN (on every primary of a cluster).
pub(crate) async fn queues(c: &Conn, json: bool) -> Outcome {
    let client = client(c)?;
    print(&render::queues(&client.queues().await?, json));
    Ok(())
}

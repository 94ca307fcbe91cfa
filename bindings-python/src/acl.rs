//! `tideq.acl_rules` over the core's `acl::rules`: the Redis ACL rules of one role on one queue.

use pyo3::prelude::*;
use tideq::acl::{rules, Role};

use crate::convert::{self, Text};
use crate::error;

/// The Redis ACL rules that let a user do ``role`` on ``queue`` (split in ``shards``) under
/// the key ``prefix`` (default: the client's default, ``"tideq"``), and nothing else: for
/// ``ACL SETUSER <user> reset on ><password> <rules>``. Roles: ``"producer"`` (enqueue),
/// ``"worker"`` (run a worker), ``"admin"`` (``get``, ``jobs``, ``cancel``, dead letters,
/// ``stats``), ``"capped-producer"`` (push) and ``"capped-consumer"`` (pop, consume, ``len``,
/// ``groups``, ``stats``). On a Redis Cluster add ``+cluster|slots +cluster|shards``. An
/// unknown role or a bad name raises ``InvalidArgumentError``.
#[pyfunction]
#[pyo3(
    signature = (queue, role, *, prefix=default_prefix(), shards=1),
    // The default as Python shows it (pyo3 writes `...` for a computed one): the core's default
    // prefix, which tests/python/test_signatures.py checks.
    text_signature = "(queue, role, *, prefix='tideq', shards=1)"
)]
pub fn acl_rules(
    queue: Text,
    role: Text,
    prefix: Text,
    #[pyo3(from_py_with = convert::int)] shards: i64,
) -> PyResult<String> {
    let shards = convert::count("shards", shards)?;
    let role = Role::parse(&role.0).map_err(error::to_py)?;
    rules(&prefix.0, &queue.0, shards, role).map_err(error::to_py)
}

/// The key prefix of a client created without one (the core's default).
fn default_prefix() -> Text {
    Text(tideq::Config::default().prefix().to_string())
}

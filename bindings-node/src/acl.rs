//! `aclRules`: the Redis ACL rules each role needs for one queue (core `acl`), for operators who
//! give every process a Redis user limited to its role.

// The exported function is registered with Node at load time; a `cargo test` build sees no caller.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{count1, string, Options};
use crate::error::{throw, Res};

/// Options of `aclRules(queue, role, options)`.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct AclRulesOptions {
    /// The key prefix the queue's clients use (`Client` option `prefix`). Default `tideq`.
    pub prefix: Option<String>,
    /// The queue's `shards` option. Default 1.
    pub shards: Option<u32>,
}

/// The ACL rules that let a Redis user do `role` on queue `queue`, and nothing else, as one line
/// for `ACL SETUSER <user> reset on ><password> <rules>` (split on spaces when sending it as
/// arguments). Roles: `producer` (enqueue), `worker` (`work`/`run`), `admin` (`get`, `jobs`,
/// `cancel`, dead letters, `stats`), `capped-producer` (push), `capped-consumer` (pop, consume,
/// `len`, `groups`, `stats`). On a Redis Cluster, add `+cluster|slots +cluster|shards`. Throws
/// `INVALID_ARGUMENT` for an unknown role or a bad queue name, prefix or shard count.
#[napi(
    ts_args_type = "queue: string, role: 'producer' | 'worker' | 'admin' | 'capped-producer' | 'capped-consumer', options?: AclRulesOptions"
)]
pub fn acl_rules(
    env: &Env,
    queue: Unknown,
    role: Unknown,
    options: Option<Unknown>,
) -> Result<String> {
    throw(env, rules(&queue, &role, options.as_ref()))
}

fn rules(queue: &Unknown, role: &Unknown, options: Option<&Unknown>) -> Res<String> {
    let queue = string("queue name", queue)?;
    let role = tideq::acl::Role::parse(&string("role", role)?)?;
    let opts = Options::new("aclRules options", options, &["prefix", "shards"])?;
    let prefix = match opts.get("prefix", string)? {
        Some(prefix) => prefix,
        None => tideq::Config::default().prefix().to_string(),
    };
    let shards = opts.get("shards", count1)?.unwrap_or(1);
    Ok(tideq::acl::rules(&prefix, &queue, shards, role)?)
}

//! The Lua scripts (files under `src/lua/`, each opening with its KEYS/ARGV/return contract) and
//! how they run: EVALSHA first, `SCRIPT LOAD` + retry on NOSCRIPT, also inside pipelines.

use std::sync::LazyLock;

/// One Lua script, compiled into the crate, with its SHA1 computed once.
pub(crate) struct LuaScript {
    pub name: &'static str,
    pub code: &'static str,
    pub sha: String,
}

impl LuaScript {
    fn new(name: &'static str, code: &'static str) -> Self {
        LuaScript {
            name,
            code,
            sha: redis::Script::new(code).get_hash().to_string(),
        }
    }

    /// An `EVALSHA` command for this script.
    pub fn cmd<K: redis::ToRedisArgs>(&self, keys: &[K]) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.sha).arg(keys.len()).arg(keys);
        cmd
    }

    pub fn load_cmd(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(self.code);
        cmd
    }
}

macro_rules! script {
    ($ident:ident, $file:literal) => {
        pub(crate) static $ident: LazyLock<LuaScript> =
            LazyLock::new(|| LuaScript::new($file, include_str!(concat!("lua/", $file))));
    };
    // A script that uses the shared job helpers: lib_jobs.lua is put in front of it.
    ($ident:ident, $file:literal, jobs_lib) => {
        pub(crate) static $ident: LazyLock<LuaScript> = LazyLock::new(|| {
            LuaScript::new(
                $file,
                concat!(
                    include_str!("lua/lib_jobs.lua"),
                    include_str!(concat!("lua/", $file))
                ),
            )
        });
    };
}

script!(PUSH_CAPPED, "push_capped.lua");
script!(POP_CAPPED, "pop_capped-4.lua");
script!(NEXT_GROUP, "next_group-1.lua");
script!(ENQUEUE_JOBS, "enqueue_jobs-6.lua", jobs_lib);
script!(FETCH_JOBS, "fetch_jobs-9.lua", jobs_lib);
script!(COMPLETE_JOBS, "complete_jobs-6.lua", jobs_lib);
script!(SETTLE_JOB, "settle_job-9.lua", jobs_lib);
script!(EXTEND_LEASE, "extend_lease-2.lua", jobs_lib);
script!(CANCEL_JOB, "cancel_job-7.lua");
script!(DEAD_LETTERS, "dead_letters-7.lua", jobs_lib);

/// Every script, so a client can find one by SHA (e.g. to reload it after NOSCRIPT).
pub(crate) fn all() -> [&'static LuaScript; 10] {
    [
        &PUSH_CAPPED,
        &POP_CAPPED,
        &NEXT_GROUP,
        &ENQUEUE_JOBS,
        &FETCH_JOBS,
        &COMPLETE_JOBS,
        &SETTLE_JOB,
        &EXTEND_LEASE,
        &CANCEL_JOB,
        &DEAD_LETTERS,
    ]
}

/// Finds which script an `EVALSHA` command runs (first argument after the command name).
pub(crate) fn by_sha(sha: &[u8]) -> Option<&'static LuaScript> {
    all().into_iter().find(|s| s.sha.as_bytes() == sha)
}

pub(crate) fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_script_states_its_contract() {
        for s in super::all() {
            assert!(
                s.code.starts_with("--[["),
                "{} must open with its contract",
                s.name
            );
            for word in ["KEYS[1]", "ARGV[1]", "Returns:"] {
                assert!(s.code.contains(word), "{} header lacks {word}", s.name);
            }
        }
    }
}

//! Scripts by EVALSHA, loaded again on NOSCRIPT (also inside pipelines), and the errors a script
//! call reports (naming the script).

use redis::{FromRedisValue, Value};

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::scripts::{self, LuaScript};

/// The message of a `WRONGTYPE` error whose key was found: something else than tideq wrote
/// there, and retrying cannot help (see [`Error::is_fatal`]).
fn wrong_type(key: &str, got: &str, want: &str) -> String {
    format!(
        "WRONGTYPE: the key {key:?} holds a {got} where tideq keeps a {want}: another program \
         writes under tideq's key prefix (give tideq a prefix of its own, or remove that key)"
    )
}

impl Client {
    fn script_err(&self, e: redis::RedisError, script: &LuaScript) -> Error {
        let err = self.err(e);
        match err.kind() {
            ErrorKind::Redis => {
                let message = format!("{} ({})", err.message(), script.name);
                err.with_message(message)
            }
            // Inside a script Redis says only "can't run this command": name it from the line.
            ErrorKind::Permission if err.message().contains("@user_script:") => {
                let message = format!(
                    "the Redis user may not run {}, which {} needs (see 'Least \
                     privilege', docs/security.md, for the ACL each role needs)",
                    script.denied_command(err.message()),
                    script.name
                );
                err.with_message(message)
            }
            // The server answered (it was checked on connecting): a reply of another shape than
            // the script's is not "something else listening on that port".
            ErrorKind::NotRedis => Error::new(
                ErrorKind::Redis,
                format!("unexpected reply from {}: {}", script.name, err.message()),
            ),
            _ => err,
        }
    }

    /// Runs one script by EVALSHA, loading it on NOSCRIPT and retrying. During a cluster failover
    /// on Valkey (which does not pass loaded scripts on to replicas) the retry can meet a node
    /// whose scripts are not loaded yet: up to five tries, 25 ms apart and growing, while the
    /// topology settles.
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        script: &LuaScript,
    ) -> Result<T> {
        let mut conn = self.conn().await?;
        self.eval_on(&mut conn, cmd, script).await
    }

    /// [`eval`](Self::eval) on a given connection.
    pub(crate) async fn eval_on<T: FromRedisValue>(
        &self,
        conn: &mut Conn,
        cmd: &redis::Cmd,
        script: &LuaScript,
    ) -> Result<T> {
        let conn = &mut *conn;
        let mut tries = 0;
        loop {
            match cmd.query_async::<T>(conn).await {
                Err(e) if scripts::is_noscript(&e) && tries < 5 => {
                    if tries > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(25 << tries)).await;
                    }
                    tries += 1;
                    script
                        .load_cmd()
                        .query_async::<String>(conn)
                        .await
                        .map_err(|e| self.err(e))?;
                }
                Err(e) if e.code() == Some("WRONGTYPE") => {
                    let err = self.script_err(e, script);
                    return Err(match script.wrong_type_key(conn, cmd).await {
                        Some((key, got, want)) => err.with_message(wrong_type(&key, &got, want)),
                        None => err,
                    });
                }
                other => return other.map_err(|e| self.script_err(e, script)),
            }
        }
    }

    /// Sends commands in one pipeline and returns their replies in order. Scripts that Redis no
    /// longer knows (NOSCRIPT after a restart or `SCRIPT FLUSH`) are loaded and only the commands
    /// that failed that way are sent again; any other error fails the call.
    pub(crate) async fn pipeline(&self, cmds: &[redis::Cmd]) -> Result<Vec<Value>> {
        let mut conn = self.conn().await?;
        self.pipeline_on(&mut conn, cmds).await
    }

    /// [`pipeline`](Self::pipeline) on a given connection.
    pub(crate) async fn pipeline_on(
        &self,
        conn: &mut Conn,
        cmds: &[redis::Cmd],
    ) -> Result<Vec<Value>> {
        let conn = &mut *conn;
        let mut out: Vec<Option<Value>> = vec![None; cmds.len()];
        let mut pending: Vec<usize> = (0..cmds.len()).collect();
        for _round in 0..3 {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for &i in &pending {
                pipe.add_command(cmds[i].clone());
            }
            let replies: Vec<redis::RedisResult<Value>> =
                pipe.query_async(conn).await.map_err(|e| self.err(e))?;
            let mut missing = Vec::new();
            for (&i, reply) in pending.iter().zip(replies) {
                match reply {
                    Ok(v) => out[i] = Some(v),
                    Err(e) if scripts::is_noscript(&e) => missing.push(i),
                    Err(e) => return Err(self.err(e)),
                }
            }
            if missing.is_empty() {
                return Ok(out.into_iter().map(|v| v.unwrap_or(Value::Nil)).collect());
            }
            // One SCRIPT LOAD at a time: on a cluster, redis-rs sends it to every node.
            let mut loaded: Vec<&str> = Vec::new();
            for &i in &missing {
                if let Some(redis::Arg::Simple(sha)) = cmds[i].args_iter().nth(1) {
                    if let Some(script) = scripts::by_sha(sha) {
                        if !loaded.contains(&script.name) {
                            loaded.push(script.name);
                            script
                                .load_cmd()
                                .query_async::<()>(conn)
                                .await
                                .map_err(|e| self.err(e))?;
                        }
                    }
                }
            }
            pending = missing;
        }
        Err(Error::new(
            ErrorKind::Redis,
            "scripts kept disappearing (NOSCRIPT) while pipelining",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::{COUNT_CAPPED_GROUPS, GET_JOBS};
    use tideq_testing::RedisServer;

    #[tokio::test]
    async fn after_noscript_in_a_pipeline_only_the_commands_that_failed_are_sent_again() {
        let s = RedisServer::start_private(tideq_testing::free_port(), &[]);
        let client = Client::open(&s.url).unwrap();
        let mut conn = client.conn().await.unwrap();
        // One script known to Redis, the other not.
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        GET_JOBS
            .load_cmd()
            .query_async::<String>(&mut conn)
            .await
            .unwrap();
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        let jobs = crate::keys::JobKeys::new("t", "q").unwrap();
        let capped = crate::keys::CappedKeys::new("t", "q").unwrap();
        let mut read = GET_JOBS.cmd(&jobs.for_script(&GET_JOBS));
        read.arg("some-id");
        let count = COUNT_CAPPED_GROUPS.cmd(&capped.for_script(&COUNT_CAPPED_GROUPS, ""));
        let replies = client.pipeline(&[read.clone(), count, read]).await.unwrap();
        assert_eq!(replies.len(), 3);
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        let calls = |name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))
                .and_then(|l| l.split("calls=").nth(1))
                .and_then(|c| c.split(',').next())
                .and_then(|c| c.parse().ok())
                .unwrap_or(0)
        };
        assert_eq!(
            calls("evalsha"),
            4,
            "three sent, and only the failed one again: {info}"
        );
        assert_eq!(calls("script|load"), 1, "{info}");
    }
}

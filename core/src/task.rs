//! Tasks by name: a job can carry a task name and arguments (JSON by default, or MessagePack)
//! instead of bare bytes, and a worker started with a set of [`Tasks`] runs the handler of each
//! job's name. A job whose name no handler has goes to the dead letters at once, with an error
//! naming the tasks the worker knows, instead of being retried. Names and arguments are plain
//! envelope fields, so a task enqueued from Python runs on a Node or Rust worker and back.
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//! use tideq::{Client, Config, EnqueueOptions, Job, Queue, QueueOptions, Tasks, WorkerOptions};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Welcome { to: String }
//!
//! # async fn demo() -> tideq::Result<()> {
//! let q = Queue::new(&Client::new(Config::from_env())?, "emails", QueueOptions::default())?;
//! q.enqueue_task("send-welcome", &Welcome { to: "ada@example.com".into() }, EnqueueOptions::default())
//!     .await?;
//! let tasks = Tasks::new().task("send-welcome", |args: Welcome, _job: Job| async move {
//!     println!("welcome, {}", args.to);
//!     Ok::<(), String>(())
//! });
//! let worker = q.work_tasks(WorkerOptions::default(), tasks)?;
//! # worker.shutdown().await; Ok(()) }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::envelope::PayloadFormat;
use crate::error::{Error, Result};
use crate::job::{validate_label, EnqueueOptions, Enqueued, Job};
use crate::jobs::Queue;
use crate::worker::{JobHandler, Worker, WorkerOptions};

/// A worker's handlers by task name.
#[derive(Clone, Default)]
pub struct Tasks {
    pub(crate) handlers: HashMap<String, JobHandler>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Tasks {
    pub fn new() -> Self {
        Tasks::default()
    }

    /// A task whose arguments are a `T` (decoded from JSON or MessagePack, as enqueued). The
    /// handler's `Ok` completes the job with its result, as a worker's handler
    /// ([`IntoJobResult`](crate::IntoJobResult)); its `Err` fails the attempt (retried after the
    /// backoff); arguments that do not decode as a `T` fail it too.
    pub fn task<T, F, Fut, R, E>(self, name: &str, handler: F) -> Self
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(T, Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, E>> + Send + 'static,
        R: crate::IntoJobResult + 'static,
        E: Into<crate::worker::HandlerError> + 'static,
    {
        let handler = Arc::new(handler);
        self.raw(name, move |job: Job| {
            let handler = handler.clone();
            async move {
                let args: T = job.args()?;
                let r = handler(args, job).await.map_err(Into::into)?;
                R::into_job_result(r).map_err(crate::worker::HandlerError::from)
            }
        })
    }

    /// A task whose handler reads the job itself (its payload as bytes, or `job.args()`).
    pub fn raw<F, Fut, R, E>(self, name: &str, handler: F) -> Self
    where
        F: Fn(Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, E>> + Send + 'static,
        R: crate::IntoJobResult + 'static,
        E: Into<crate::worker::HandlerError> + 'static,
    {
        self.boxed(name, crate::worker::boxed(handler))
    }

    /// Binding plumbing, not part of the stable API (hidden from the docs): a task with an
    /// already boxed handler, as the Python and Node bindings register them.
    #[doc(hidden)]
    pub fn boxed(mut self, name: &str, handler: JobHandler) -> Self {
        self.handlers.insert(name.to_string(), handler);
        self
    }

    /// The task names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.handlers.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.handlers.is_empty() {
            return Err(Error::invalid("a task worker needs at least one task"));
        }
        for name in self.handlers.keys() {
            validate_label("task name", name)?;
        }
        Ok(())
    }

    /// Why `job` cannot run here, if it cannot: no task name, or none of ours.
    pub(crate) fn unknown(&self, job: &Job) -> Option<String> {
        let known = self.names().join(", ");
        match &job.task {
            Some(name) if self.handlers.contains_key(name) => None,
            Some(name) => Some(format!(
                "unknown task {name:?}: this worker runs {known} (dead-lettered, not retried)"
            )),
            None => Some(format!(
                "the job has no task name: this worker runs tasks only ({known}) (dead-lettered, \
                 not retried)"
            )),
        }
    }
}

/// Encodes task arguments in `format`.
pub fn encode_args<T: Serialize + ?Sized>(args: &T, format: PayloadFormat) -> Result<Vec<u8>> {
    match format {
        PayloadFormat::Json => serde_json::to_vec(args).map_err(|e| {
            Error::invalid(format!("task arguments are not JSON-able: {e}")).with_source(e)
        }),
        PayloadFormat::Msgpack => rmp_serde::to_vec_named(args).map_err(|e| {
            Error::invalid(format!("task arguments are not MessagePack-able: {e}")).with_source(e)
        }),
    }
}

/// MessagePack task arguments from a generic MessagePack value (the bindings build one from a
/// host value; see [`Value`](crate::envelope::Value)).
pub fn encode_msgpack_value(args: &crate::envelope::Value) -> Vec<u8> {
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, args).expect("writing to a Vec never fails");
    bytes
}

/// A payload holding MessagePack task arguments as a generic value (the bindings turn it into a
/// host value). `INVALID_ARGUMENT` unless the bytes are exactly one MessagePack value.
pub fn decode_msgpack_value(payload: &[u8]) -> Result<crate::envelope::Value> {
    let mut rest = payload;
    let value = rmpv::decode::read_value(&mut rest).map_err(|e| {
        Error::invalid(format!("task arguments (MessagePack) do not decode: {e}")).with_source(e)
    })?;
    if !rest.is_empty() {
        return Err(Error::invalid(format!(
            "task arguments (MessagePack) do not decode: {} byte(s) after the value",
            rest.len()
        )));
    }
    Ok(value)
}

impl Job {
    /// The task's arguments, decoded from the payload by its format (JSON when the job has no
    /// format, as for a job enqueued with a JSON payload by hand). `INVALID_ARGUMENT` when they
    /// do not decode as a `T`. A task enqueued without arguments (an empty payload, as a
    /// [`FlowJob::step`](crate::FlowJob::step) outside a chain) has `null` ones.
    pub fn args<T: DeserializeOwned>(&self) -> Result<T> {
        if self.payload.is_empty() && self.task.is_some() {
            return serde_json::from_slice(b"null").map_err(|e| {
                Error::invalid(format!("task arguments (none given) do not decode: {e}"))
                    .with_source(e)
            });
        }
        match self.format {
            Some(PayloadFormat::Msgpack) => rmp_serde::from_slice(&self.payload).map_err(|e| {
                Error::invalid(format!("task arguments (MessagePack) do not decode: {e}"))
            }),
            _ => serde_json::from_slice(&self.payload).map_err(|e| {
                Error::invalid(format!("task arguments (JSON) do not decode: {e}")).with_source(e)
            }),
        }
    }
}

impl Queue {
    /// Enqueues task `name` with `args` (encoded as JSON; set `opts.format` to
    /// [`PayloadFormat::Msgpack`] for MessagePack). The other options are `enqueue`'s.
    pub async fn enqueue_task<T: Serialize + ?Sized>(
        &self,
        name: &str,
        args: &T,
        opts: EnqueueOptions,
    ) -> Result<Enqueued> {
        let format = opts.format.unwrap_or(PayloadFormat::Json);
        let payload = encode_args(args, format)?;
        let opts = EnqueueOptions {
            task: Some(name.to_string()),
            format: Some(format),
            ..opts
        };
        self.enqueue(payload, opts).await
    }

    /// Starts a worker that runs each job's task by name. A job with no task name, or one no
    /// handler has, goes to the dead letters at once (its error names the tasks this worker runs).
    pub fn work_tasks(&self, opts: WorkerOptions, tasks: Tasks) -> Result<Worker> {
        tasks.validate()?;
        self.start_worker(opts, crate::worker::Handlers::Tasks(Arc::new(tasks)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Value;

    #[test]
    fn msgpack_values_round_trip_and_trailing_bytes_are_refused() {
        let v = Value::Map(vec![("to".into(), "ada".into()), ("n".into(), 3.into())]);
        let bytes = encode_msgpack_value(&v);
        assert_eq!(decode_msgpack_value(&bytes).unwrap(), v);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_msgpack_value(&longer).is_err());
        assert!(
            decode_msgpack_value(&[0x92, 0x01]).is_err(),
            "a truncated array"
        );
    }
}

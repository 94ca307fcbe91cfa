//! Model-based test of the job state machine against a real Redis (proptest-state-machine, with
//! shrinking): random sequences of enqueue, lease, complete, fail, release, cancel, requeue and
//! purge, applied both to a plain in-memory model and to a queue; after every step each job's
//! state and attempts (`get`) and the counts (`stats`) must match the model, and every call must
//! succeed or fail exactly as the model says (LEASE_LOST for a stale holder, JOB_NOT_FOUND, ...).
//! A cancel of an active job is a request: its delivery's fail or release then ends it
//! cancelled, its complete completes it.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};
use tideq::{Backoff, Client, EnqueueOptions, Job, JobState, Queue, QueueOptions};

const MAX_ATTEMPTS: u32 = 2;
const IDS: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Delayed,
    Ready,
    /// Leased, by the lease with this number.
    Active(usize),
    Dead,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Created(bool),
    Leased(Vec<String>),
    Code(&'static str),
    Count(u64),
}

#[derive(Debug, Clone, Default)]
struct Model {
    /// id -> (state, attempts as `get` reports them once not active).
    jobs: BTreeMap<String, (St, u32)>,
    ready: VecDeque<String>,
    /// Every lease taken, in order: the job id it was for.
    leases: Vec<String>,
    /// Active jobs whose cancel was requested: their delivery ends them cancelled (fail,
    /// release) unless it completes.
    cancel_requested: std::collections::BTreeSet<String>,
    expect: Option<Outcome>,
}

#[derive(Debug, Clone)]
enum Op {
    Enqueue { id: usize, delayed: bool },
    Lease { max: usize },
    Complete { lease: usize },
    Fail { lease: usize },
    Release { lease: usize },
    Cancel { id: usize },
    Requeue { id: usize },
    Purge,
}

fn name(id: usize) -> String {
    format!("j{id}")
}

impl Model {
    /// Settles lease `l`: the job if it is still held by that lease, else LEASE_LOST.
    fn held(&self, l: usize) -> Option<String> {
        let id = self.leases.get(l)?;
        matches!(self.jobs.get(id), Some((St::Active(n), _)) if *n == l).then(|| id.clone())
    }
}

struct RefModel;

impl ReferenceStateMachine for RefModel {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Op> {
        let leases = state.leases.len().max(1);
        prop_oneof![
            3 => (0..IDS, any::<bool>()).prop_map(|(id, delayed)| Op::Enqueue { id, delayed: delayed && id % 3 == 0 }),
            3 => (1..3usize).prop_map(|max| Op::Lease { max }),
            2 => (0..leases).prop_map(|lease| Op::Complete { lease }),
            2 => (0..leases).prop_map(|lease| Op::Fail { lease }),
            1 => (0..leases).prop_map(|lease| Op::Release { lease }),
            1 => (0..IDS).prop_map(|id| Op::Cancel { id }),
            1 => (0..IDS).prop_map(|id| Op::Requeue { id }),
            1 => Just(Op::Purge),
        ]
        .boxed()
    }

    fn apply(mut s: Model, op: &Op) -> Model {
        let expect = match op {
            Op::Enqueue { id, delayed } => {
                let id = name(*id);
                if s.jobs.contains_key(&id) {
                    Outcome::Created(false)
                } else {
                    if *delayed {
                        s.jobs.insert(id, (St::Delayed, 0));
                    } else {
                        s.jobs.insert(id.clone(), (St::Ready, 0));
                        s.ready.push_back(id);
                    }
                    Outcome::Created(true)
                }
            }
            Op::Lease { max } => {
                let mut got = Vec::new();
                while got.len() < *max {
                    let Some(id) = s.ready.pop_front() else { break };
                    let n = s.leases.len();
                    s.leases.push(id.clone());
                    s.jobs.get_mut(&id).unwrap().0 = St::Active(n);
                    got.push(id);
                }
                Outcome::Leased(got)
            }
            Op::Complete { lease } => match s.held(*lease) {
                Some(id) => {
                    s.cancel_requested.remove(&id);
                    s.jobs.get_mut(&id).unwrap().0 = St::Completed;
                    Outcome::Ok
                }
                None => Outcome::Code("LEASE_LOST"),
            },
            Op::Fail { lease } => match s.held(*lease) {
                Some(id) if s.cancel_requested.remove(&id) => {
                    s.jobs.remove(&id);
                    Outcome::Ok
                }
                Some(id) => {
                    let job = s.jobs.get_mut(&id).unwrap();
                    job.1 += 1;
                    if job.1 >= MAX_ATTEMPTS {
                        job.0 = St::Dead;
                    } else {
                        job.0 = St::Ready;
                        s.ready.push_back(id);
                    }
                    Outcome::Ok
                }
                None => Outcome::Code("LEASE_LOST"),
            },
            Op::Release { lease } => match s.held(*lease) {
                Some(id) if s.cancel_requested.remove(&id) => {
                    s.jobs.remove(&id);
                    Outcome::Ok
                }
                Some(id) => {
                    s.jobs.get_mut(&id).unwrap().0 = St::Ready;
                    s.ready.push_front(id);
                    Outcome::Ok
                }
                None => Outcome::Code("LEASE_LOST"),
            },
            Op::Cancel { id } => {
                let id = name(*id);
                match s.jobs.get(&id).map(|j| j.0) {
                    None => Outcome::Code("JOB_NOT_FOUND"),
                    Some(St::Delayed | St::Ready) => {
                        s.jobs.remove(&id);
                        s.ready.retain(|r| *r != id);
                        Outcome::Ok
                    }
                    Some(St::Active(_)) => {
                        s.cancel_requested.insert(id);
                        Outcome::Ok
                    }
                    Some(_) => Outcome::Code("JOB_NOT_CANCELLABLE"),
                }
            }
            Op::Requeue { id } => {
                let id = name(*id);
                match s.jobs.get_mut(&id) {
                    Some(job) if job.0 == St::Dead => {
                        *job = (St::Ready, 0);
                        s.ready.push_back(id);
                        Outcome::Ok
                    }
                    _ => Outcome::Code("JOB_NOT_FOUND"),
                }
            }
            Op::Purge => {
                let dead: Vec<String> = s
                    .jobs
                    .iter()
                    .filter(|(_, j)| j.0 == St::Dead)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &dead {
                    s.jobs.remove(id);
                }
                Outcome::Count(dead.len() as u64)
            }
        };
        s.expect = Some(expect);
        s
    }
}

struct Sut {
    rt: tokio::runtime::Runtime,
    q: Queue,
    /// The leased jobs, in the order the model numbers its leases.
    leased: Vec<Job>,
}

fn server_url() -> &'static str {
    static SERVER: OnceLock<common::RedisServer> = OnceLock::new();
    &SERVER.get_or_init(common::RedisServer::start).url
}

fn code<T>(r: tideq::Result<T>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Code(e.code()),
    }
}

struct QueueTest;

impl StateMachineTest for QueueTest {
    type SystemUnderTest = Sut;
    type Reference = RefModel;

    fn init_test(_: &Model) -> Sut {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let opts = QueueOptions {
            max_attempts: MAX_ATTEMPTS,
            backoff: Backoff::fixed(0),
            ..Default::default()
        };
        let q = Queue::new(
            &Client::open(server_url()).unwrap(),
            &common::unique("model"),
            opts,
        )
        .unwrap();
        Sut {
            rt,
            q,
            leased: Vec::new(),
        }
    }

    fn apply(mut sut: Sut, model: &Model, op: Op) -> Sut {
        let q = sut.q.clone();
        let got = sut.rt.block_on(async {
            match &op {
                Op::Enqueue { id, delayed } => {
                    let delay = delayed.then_some(Duration::from_secs(3600));
                    let o = EnqueueOptions {
                        id: Some(name(*id)),
                        delay,
                        ..Default::default()
                    };
                    Outcome::Created(q.enqueue(b"x", o).await.unwrap().created)
                }
                Op::Lease { max } => {
                    let jobs = q.lease_jobs(*max, Duration::from_secs(60)).await.unwrap();
                    let ids = jobs.iter().map(|j| j.id.clone()).collect();
                    sut.leased.extend(jobs);
                    Outcome::Leased(ids)
                }
                Op::Complete { lease } => match sut.leased.get(*lease) {
                    Some(job) => code(q.complete(job).await),
                    None => Outcome::Code("LEASE_LOST"),
                },
                Op::Fail { lease } => match sut.leased.get(*lease) {
                    Some(job) => code(q.fail(job, "boom").await),
                    None => Outcome::Code("LEASE_LOST"),
                },
                Op::Release { lease } => match sut.leased.get(*lease) {
                    Some(job) => code(q.release(job).await),
                    None => Outcome::Code("LEASE_LOST"),
                },
                Op::Cancel { id } => code(q.cancel(&name(*id)).await),
                Op::Requeue { id } => code(q.requeue(&name(*id)).await),
                Op::Purge => Outcome::Count(q.purge().await.unwrap()),
            }
        });
        assert_eq!(Some(&got), model.expect.as_ref(), "{op:?}");
        sut
    }

    fn check_invariants(sut: &Sut, model: &Model) {
        sut.rt.block_on(async {
            for i in 0..IDS {
                let id = name(i);
                let info = sut.q.get(&id).await.unwrap();
                let want = model.jobs.get(&id);
                match (info, want) {
                    (None, None) => {}
                    (Some(info), Some((st, attempts))) => {
                        let (state, shown) = match st {
                            St::Delayed => (JobState::Delayed, *attempts),
                            St::Ready => (JobState::Ready, *attempts),
                            St::Active(_) => (JobState::Active, attempts + 1),
                            St::Dead => (JobState::Dead, *attempts),
                            St::Completed => (JobState::Completed, attempts + 1),
                        };
                        assert_eq!((info.state, info.attempts), (state, shown), "{id}");
                    }
                    (info, want) => panic!("{id}: Redis has {info:?}, the model {want:?}"),
                }
            }
            let s = sut.q.stats().await.unwrap();
            let count = |f: fn(&St) -> bool| model.jobs.values().filter(|j| f(&j.0)).count() as u64;
            assert_eq!(s.delayed, count(|s| *s == St::Delayed));
            assert_eq!(s.ready, count(|s| *s == St::Ready));
            assert_eq!(s.active, count(|s| matches!(s, St::Active(_))));
            assert_eq!(s.dead, count(|s| *s == St::Dead));
        });
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn a_queue_follows_its_state_model_step_by_step(sequential 1..40 => QueueTest);
}

//! The supervisor's loop: keeps N children, restarts them with backoff, recycles them (a
//! replacement first, the old one stopped once the new one is ready), and answers signals.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::child::{self, Event};
use super::health::Probes;
use super::Plan;

/// Failures at start (exits before the first `ready 1`) in a row that end the command.
const QUICK_FAILURES: u32 = 3;
/// Restart backoff: from this, doubling, up to `BACKOFF_MAX`; reset once a child stayed up
/// `STABLE`.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
const STABLE: Duration = Duration::from_secs(30);
/// A child being replaced is stopped at the latest this long after its replacement started,
/// ready or not.
const REPLACE_BOUND: Duration = Duration::from_secs(30);
/// A child whose last status line is older than this is not counted ready.
const STALE: Duration = Duration::from_secs(2);
/// After a stop, how long past the grace the children have before they are killed.
const STOP_MARGIN: Duration = Duration::from_secs(10);
const TICK: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Counted among the N.
    Active,
    /// Being replaced (recycling, memory, reload): runs until its replacement is ready.
    Replacing(Instant),
    /// Sent SIGTERM: finishing its jobs.
    Retiring,
}

struct Kid {
    pid: u32,
    started: Instant,
    state: State,
    /// Reported `ready 1` at least once.
    was_ready: bool,
    /// Its latest line said ready, and when it came.
    ready: bool,
    last_line: Instant,
    /// Told it reached its job limit.
    recycling: bool,
}

struct Sup {
    plan: Plan,
    kids: BTreeMap<u64, Kid>,
    next_id: u64,
    desired: usize,
    events: mpsc::UnboundedSender<Event>,
    quick_failures: u32,
    restarts: u32,
    next_spawn: Instant,
    /// SIGHUP: the children still to replace, one at a time, and the one being replaced.
    roll: VecDeque<u64>,
    rolling: Option<u64>,
    /// 0 running, 1 stopping gracefully, 2 aborting.
    stopping: u8,
    stop_deadline: Option<Instant>,
    /// The exit code once every child is gone.
    code: u8,
}

impl Sup {
    fn fields(&self, id: u64) -> Vec<(&'static str, serde_json::Value)> {
        let pid = self.kids.get(&id).map(|k| k.pid).unwrap_or(0);
        vec![("child", json!(id)), ("pid", json!(pid))]
    }

    fn active(&self) -> usize {
        self.kids
            .values()
            .filter(|k| k.state == State::Active)
            .count()
    }

    fn spawn(&mut self, why: &str) -> bool {
        self.next_id += 1;
        let id = self.next_id;
        match child::spawn(id, &self.plan.argv, self.events.clone()) {
            Ok(s) => {
                let now = Instant::now();
                self.kids.insert(
                    id,
                    Kid {
                        pid: s.pid,
                        started: now,
                        state: State::Active,
                        was_ready: false,
                        ready: false,
                        last_line: now,
                        recycling: false,
                    },
                );
                self.plan.log.info(
                    "child_started",
                    &format!("child {id} (pid {}) started ({why})", s.pid),
                    &[
                        ("child", json!(id)),
                        ("pid", json!(s.pid)),
                        ("reason", json!(why)),
                    ],
                );
                true
            }
            Err(e) => {
                self.plan.log.error(
                    "child_failed",
                    &format!("cannot start a child ({:?}): {e}", self.plan.argv[0]),
                    &[],
                );
                self.code = 1;
                self.stop(false);
                false
            }
        }
    }

    /// Starts replacing `id` (`why`: recycling, memory, reload): its replacement is started by
    /// the next look, and it is stopped once that one is ready.
    fn replace(&mut self, id: u64, why: &str, extra: &[(&'static str, serde_json::Value)]) {
        let Some(k) = self.kids.get_mut(&id) else {
            return;
        };
        if k.state != State::Active {
            return;
        }
        k.state = State::Replacing(Instant::now());
        let mut f = self.fields(id);
        f.push(("reason", json!(why)));
        f.extend_from_slice(extra);
        self.plan.log.info(
            "child_recycling",
            &format!(
                "child {id} (pid {}) is being replaced ({why})",
                self.kids[&id].pid
            ),
            &f,
        );
    }

    fn retire(&mut self, id: u64) {
        if let Some(k) = self.kids.get_mut(&id) {
            if k.state != State::Retiring {
                k.state = State::Retiring;
                child::signal(k.pid, libc::SIGTERM);
            }
        }
        if self.rolling == Some(id) {
            self.rolling = None;
        }
    }

    fn stop(&mut self, again: bool) {
        if again {
            self.stopping = 2;
            self.plan.log.warn(
                "stopping_now",
                "stopping at once: the children abort, their running jobs go back to the \
                 queue by their leases",
                &[],
            );
        } else {
            self.stopping = 1;
            self.stop_deadline = Some(Instant::now() + self.plan.grace + STOP_MARGIN);
            self.plan.log.info(
                "stopping",
                &format!(
                    "stopping: the children finish their jobs (grace {:?}); stop again to abort",
                    self.plan.grace
                ),
                &[],
            );
        }
        for k in self.kids.values_mut() {
            k.state = State::Retiring;
            child::signal(k.pid, libc::SIGTERM);
        }
    }

    fn on_line(&mut self, id: u64, line: &str) {
        let Some(k) = self.kids.get_mut(&id) else {
            return;
        };
        k.last_line = Instant::now();
        let mut words = line.split_whitespace();
        match words.next() {
            Some("ready") => {
                k.ready = words.next() == Some("1");
                if k.ready && !k.was_ready {
                    k.was_ready = true;
                    self.quick_failures = 0;
                    let (pid, active) = (k.pid, k.state == State::Active);
                    self.plan.log.info(
                        "child_ready",
                        &format!("child {id} (pid {pid}) is ready"),
                        &self.fields(id),
                    );
                    // A new child is ready: the oldest one waiting for its replacement stops.
                    if active {
                        let old = self
                            .kids
                            .iter()
                            .filter_map(|(i, k)| match k.state {
                                State::Replacing(since) => Some((since, *i)),
                                _ => None,
                            })
                            .min();
                        if let Some((_, old)) = old {
                            self.retire(old);
                        }
                    }
                }
            }
            Some("recycling") if !k.recycling => {
                k.recycling = true;
                let jobs = line.rsplit(' ').next().unwrap_or("0").to_string();
                self.replace(
                    id,
                    "max jobs reached",
                    &[("jobs", json!(jobs.parse::<u64>().unwrap_or(0)))],
                );
            }
            _ => {}
        }
    }

    /// Returns false when the command must end now (too many failures at start).
    fn on_exit(&mut self, id: u64, status: std::process::ExitStatus, tail: &str) {
        let Some(k) = self.kids.remove(&id) else {
            return;
        };
        if self.rolling == Some(id) {
            self.rolling = None;
        }
        let up = k.started.elapsed();
        let how = match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => "unknown status".into(),
        };
        let expected = k.state != State::Active || self.stopping > 0;
        let mut f = vec![
            ("child", json!(id)),
            ("pid", json!(k.pid)),
            ("status", json!(how)),
            ("uptime_s", json!(up.as_secs_f64())),
        ];
        if expected {
            self.plan.log.info(
                "child_exited",
                &format!("child {id} (pid {}) exited ({how})", k.pid),
                &f,
            );
            return;
        }
        if !k.was_ready {
            self.quick_failures += 1;
            if self.quick_failures >= QUICK_FAILURES {
                f.push(("stderr_tail", json!(tail)));
                self.plan.log.error(
                    "giving_up",
                    &format!(
                        "child {id} (pid {}) failed at start ({how}), {} times in a row; giving \
                         up. Its last error output:\n{tail}",
                        k.pid, self.quick_failures
                    ),
                    &f,
                );
                self.code = 1;
                self.stop(false);
                return;
            }
        }
        if up >= STABLE {
            self.restarts = 0;
        }
        let delay = BACKOFF_MIN
            .saturating_mul(1u32 << self.restarts.min(16))
            .min(BACKOFF_MAX);
        self.restarts += 1;
        self.next_spawn = Instant::now() + delay;
        f.push(("restart_in_s", json!(delay.as_secs_f64())));
        self.plan.log.warn(
            "child_exited",
            &format!(
                "child {id} (pid {}) exited unexpectedly ({how}); restarting in {delay:?}",
                k.pid
            ),
            &f,
        );
    }

    /// The periodic look: memory, replacements overdue, the rolling restart, children to start,
    /// the probes.
    fn look(&mut self, probes: &Probes) {
        let now = Instant::now();
        if self.stopping > 0 {
            if self.stop_deadline.is_some_and(|d| now >= d) {
                self.stop_deadline = None;
                self.plan.log.warn(
                    "killing",
                    "the children did not stop within the grace and its margin; killing them",
                    &[],
                );
                for k in self.kids.values() {
                    child::signal_group(k.pid, libc::SIGKILL);
                }
            }
            probes.live.store(false, Ordering::Relaxed);
            probes.ready.store(false, Ordering::Relaxed);
            return;
        }
        if let Some(limit) = self.plan.max_memory {
            let over: Vec<(u64, u64)> = self
                .kids
                .iter()
                .filter(|(_, k)| k.state == State::Active)
                .filter_map(|(i, k)| child::rss(k.pid).filter(|r| *r > limit).map(|r| (*i, r)))
                .collect();
            for (id, rss) in over {
                self.replace(
                    id,
                    "memory over the limit",
                    &[("rss_bytes", json!(rss)), ("limit_bytes", json!(limit))],
                );
            }
        }
        let overdue: Vec<u64> = self
            .kids
            .iter()
            .filter(|(_, k)| matches!(k.state, State::Replacing(s) if now - s >= REPLACE_BOUND))
            .map(|(i, _)| *i)
            .collect();
        for id in overdue {
            self.retire(id);
        }
        if self.rolling.is_none() {
            while let Some(id) = self.roll.pop_front() {
                if self.kids.get(&id).is_some_and(|k| k.state == State::Active) {
                    self.rolling = Some(id);
                    self.replace(id, "reload (SIGHUP)", &[]);
                    break;
                }
            }
        }
        // After a failure at start, one child starts at a time (a broken target starts a
        // bounded number of children).
        let starting = self
            .kids
            .values()
            .any(|k| k.state == State::Active && !k.was_ready);
        while self.active() < self.desired && now >= self.next_spawn && self.stopping == 0 {
            if self.quick_failures > 0 && starting {
                break;
            }
            let why = if self.next_id == 0 {
                "start"
            } else {
                "replacement"
            };
            if !self.spawn(why) || self.quick_failures > 0 {
                break;
            }
        }
        // Too many: the newest active ones stop (SIGTTOU).
        while self.active() > self.desired {
            let newest = self
                .kids
                .iter()
                .rev()
                .find(|(_, k)| k.state == State::Active)
                .map(|(i, _)| *i);
            match newest {
                Some(id) => self.retire(id),
                None => break,
            }
        }
        let ready = self.active() == self.desired
            && self
                .kids
                .values()
                .filter(|k| k.state == State::Active)
                .all(|k| k.ready && now - k.last_line < STALE);
        probes.live.store(true, Ordering::Relaxed);
        probes.ready.store(ready, Ordering::Relaxed);
    }
}

/// Runs the plan until a signal stops it (0) or the children fail at start (1).
pub(crate) async fn supervise(plan: Plan) -> u8 {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let probes = Arc::new(Probes::default());
    let stop_health = tideq::CancellationToken::new();
    let health = match plan.health {
        Some(addr) => match super::health::start(addr, probes.clone(), stop_health.clone()).await {
            Ok(h) => Some(h),
            Err(e) => {
                eprintln!("tideq worker: {e}");
                return 2;
            }
        },
        None => None,
    };
    let sig = |k: SignalKind| signal(k).expect("signal handlers install");
    let (mut term, mut int, mut hup) = (
        sig(SignalKind::terminate()),
        sig(SignalKind::interrupt()),
        sig(SignalKind::hangup()),
    );
    let (mut ttin, mut ttou) = (
        sig(SignalKind::from_raw(libc::SIGTTIN)),
        sig(SignalKind::from_raw(libc::SIGTTOU)),
    );
    let mut s = Sup {
        desired: plan.processes,
        plan,
        kids: BTreeMap::new(),
        next_id: 0,
        events: tx,
        quick_failures: 0,
        restarts: 0,
        next_spawn: Instant::now(),
        roll: VecDeque::new(),
        rolling: None,
        stopping: 0,
        stop_deadline: None,
        code: 0,
    };
    s.plan.log.info(
        "supervisor_started",
        &format!(
            "starting {} {} child process(es): {}",
            s.desired,
            s.plan.runtime,
            s.plan
                .argv
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        &[
            ("processes", json!(s.desired)),
            ("runtime", json!(s.plan.runtime)),
        ],
    );
    let mut tick = tokio::time::interval(TICK);
    loop {
        s.look(&probes);
        if s.stopping > 0 && s.kids.is_empty() {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {}
            Some(ev) = rx.recv() => match ev {
                Event::Line(id, line) => s.on_line(id, &line),
                Event::Exit(id, status, tail) => s.on_exit(id, status, &tail),
            },
            _ = term.recv() => s.stop(s.stopping > 0),
            _ = int.recv() => s.stop(s.stopping > 0),
            _ = hup.recv() => if s.stopping == 0 {
                s.plan.log.info("reload", "reload (SIGHUP): replacing every child, one at a time", &[]);
                s.roll = s.kids.iter().filter(|(_, k)| k.state == State::Active).map(|(i, _)| *i).collect();
            },
            _ = ttin.recv() => if s.stopping == 0 {
                s.desired += 1;
                s.plan.log.info("scale", &format!("one process more (SIGTTIN): {}", s.desired), &[("processes", json!(s.desired))]);
            },
            _ = ttou.recv() => if s.stopping == 0 && s.desired > 1 {
                s.desired -= 1;
                s.plan.log.info("scale", &format!("one process less (SIGTTOU): {}", s.desired), &[("processes", json!(s.desired))]);
            },
        }
    }
    stop_health.cancel();
    if let Some(h) = health {
        let _ = h.await;
    }
    s.plan.log.info(
        "supervisor_stopped",
        "every child has stopped",
        &[("exit_code", json!(s.code))],
    );
    s.code
}

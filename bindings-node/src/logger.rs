//! Where the core's log lines go in a Node process: stderr, as `tideq: ...` lines. Workers and
//! consumers report what they retry (Redis unreachable, a lost lease, a damaged record) through
//! the `log` crate; without a logger those lines would vanish.
//!
//! - Level: the environment variable `TIDEQ_LOG` (`off`, `error`, `warn` (default), `info`,
//!   `debug`), read once when the addon loads.
//! - Rate: at most one line per call site every [`INTERVAL`]; the next line from that site says
//!   how many were left out meanwhile (a worker retrying against a dead Redis would otherwise
//!   print a line per try).
//! - Handler failures (`tideq::HANDLER_LOG_TARGET`) are left out: the binding reports those
//!   itself, with the JS error and its stack (`onError`, else `console.error`).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// The environment variable naming the level.
const ENV: &str = "TIDEQ_LOG";

/// Shortest time between two lines from one call site.
const INTERVAL: Duration = Duration::from_secs(5);

/// The level in effect (a `LevelFilter` as usize), for [`notice`].
static LEVEL: AtomicUsize = AtomicUsize::new(LevelFilter::Warn as usize);

/// Installs the logger when the addon is loaded (once per process).
// Registered with the loader; a `cargo test` build sees no caller.
#[cfg_attr(test, allow(dead_code))]
#[napi_derive::module_init]
fn install() {
    let setting = std::env::var(ENV).ok();
    let level = match parse_level(setting.as_deref()) {
        Some(level) => level,
        None => {
            eprintln!(
                "tideq: {ENV}={:?} is not one of off, error, warn, info, debug; using warn",
                setting.unwrap_or_default()
            );
            LevelFilter::Warn
        }
    };
    LEVEL.store(level as usize, Ordering::Relaxed);
    let logger = Stderr {
        level,
        limiter: Mutex::new(Limiter::default()),
    };
    // Another logger already installed (an embedding program's) wins.
    if log::set_logger(Box::leak(Box::new(logger))).is_ok() {
        log::set_max_level(level);
    }
}

/// `TIDEQ_LOG`'s value as a level: unset or empty is `warn`; `None` for an unknown value.
fn parse_level(setting: Option<&str>) -> Option<LevelFilter> {
    Some(
        match setting.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("warn") | Some("warning") => LevelFilter::Warn,
            Some("off") | Some("none") => LevelFilter::Off,
            Some("error") => LevelFilter::Error,
            Some("info") => LevelFilter::Info,
            Some("debug") => LevelFilter::Debug,
            Some(_) => return None,
        },
    )
}

/// A line for the user (e.g. `run()` saying it is shutting down), printed unless `TIDEQ_LOG`
/// is `off`. Not rate-limited.
pub(crate) fn notice(line: &str) {
    if LEVEL.load(Ordering::Relaxed) != LevelFilter::Off as usize {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

struct Stderr {
    level: LevelFilter,
    limiter: Mutex<Limiter>,
}

impl Log for Stderr {
    fn enabled(&self, metadata: &Metadata) -> bool {
        let target = metadata.target();
        metadata.level() <= self.level
            && (target == "tideq" || target.starts_with("tideq::"))
            && target != tideq::HANDLER_LOG_TARGET
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let site = format!(
            "{}:{}",
            record.file().unwrap_or(record.target()),
            record.line().unwrap_or(0)
        );
        let Some(left_out) = self.limiter.lock().unwrap().admit(site, Instant::now()) else {
            return;
        };
        let text = record.args().to_string();
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            line(record.level(), &text, left_out)
        );
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// The printed line: `tideq: ` and the message (the core's messages start with it already),
/// with how many lines like it were left out since the last one.
fn line(level: Level, text: &str, left_out: u64) -> String {
    let mut out = if text.starts_with("tideq: ") {
        text.to_string()
    } else {
        format!("tideq: {text}")
    };
    if level > Level::Warn {
        // info/debug lines, asked for with TIDEQ_LOG: say so, so they are not taken for warnings.
        out.insert_str(
            "tideq: ".len(),
            &format!("{}: ", level.as_str().to_lowercase()),
        );
    }
    if left_out > 0 {
        out.push_str(&format!(" ({left_out} more like this since the last one)"));
    }
    out
}

/// Per call site: when its last line was printed, and how many were left out since.
#[derive(Default)]
struct Limiter {
    sites: HashMap<String, (Instant, u64)>,
}

impl Limiter {
    /// `Some(left out since the last line)` when a line from `site` may be printed at `now`,
    /// `None` when it is left out.
    fn admit(&mut self, site: String, now: Instant) -> Option<u64> {
        match self.sites.get_mut(&site) {
            Some((last, left_out)) if now.duration_since(*last) < INTERVAL => {
                *left_out += 1;
                None
            }
            Some((last, left_out)) => {
                *last = now;
                Some(std::mem::take(left_out))
            }
            None => {
                self.sites.insert(site, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_site_every_interval_then_the_count_of_those_left_out() {
        let mut limiter = Limiter::default();
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(limiter.admit("a:1".into(), at(0)), Some(0));
        assert_eq!(limiter.admit("a:1".into(), at(100)), None);
        assert_eq!(
            limiter.admit("b:2".into(), at(200)),
            Some(0),
            "sites are apart"
        );
        assert_eq!(limiter.admit("a:1".into(), at(4_999)), None);
        assert_eq!(limiter.admit("a:1".into(), at(5_000)), Some(2));
        assert_eq!(limiter.admit("a:1".into(), at(10_000)), Some(0));
        assert_eq!(
            line(Level::Warn, "tideq: fetch failed", 2),
            "tideq: fetch failed (2 more like this since the last one)"
        );
        assert_eq!(line(Level::Error, "boom", 0), "tideq: boom");
        assert_eq!(line(Level::Debug, "tideq: x", 0), "tideq: debug: x");
    }

    #[test]
    fn tideq_log_names_a_level() {
        assert_eq!(parse_level(None), Some(LevelFilter::Warn));
        assert_eq!(parse_level(Some("OFF")), Some(LevelFilter::Off));
        assert_eq!(parse_level(Some("debug")), Some(LevelFilter::Debug));
        assert_eq!(parse_level(Some("loud")), None);
    }
}

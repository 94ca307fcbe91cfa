//! The core's values as aligned text or as one JSON document. Field names are the core's.
//! One file per role, as the commands (see lib.rs); here what they share: how a payload is
//! shown ([`preview`]), tables, `name  value` pairs, one-line cuts, timestamps and cursors.

mod admin;
mod attempts;
mod capped;
mod control;
mod discover;
mod events;
mod history;
mod jobs;
mod schedule;
mod tasks;
mod workers;

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

pub use admin::*;
pub use attempts::*;
pub use capped::*;
pub use control::*;
pub use discover::*;
pub use events::*;
pub use history::*;
pub use jobs::*;
pub use schedule::*;
pub use tasks::*;
pub use workers::*;

/// The password `tideq acl` prints in the ACL SETUSER line, to be replaced.
pub const PASSWORD_PLACEHOLDER: &str = "CHANGE-ME";

/// Longest last error shown in a job table, in characters.
const ERROR_WIDTH: usize = 60;
/// Longest item shown in a `capped peek` table, in characters.
const ITEM_WIDTH: usize = 100;

/// How to show a payload (and a result or progress value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Payload {
    Json,
    Text,
    Hex,
}

/// `bytes` shown as `how`, or the first of JSON, text, hex that fits; with the way chosen.
/// A forced form that does not fit falls back to hex (a forced `hex` always fits).
pub fn preview(bytes: &[u8], how: Option<Payload>) -> (Payload, Value) {
    // Sealed (encryption at rest) and no key given to open it.
    if let Some(id) = tideq::crypt::sealed_key_id(bytes) {
        return (
            Payload::Text,
            Value::String(format!("encrypted (key {id})")),
        );
    }
    let as_json = || serde_json::from_slice::<Value>(bytes).ok();
    let as_text = || std::str::from_utf8(bytes).ok().map(|s| s.to_string());
    match how {
        Some(Payload::Json) | None => {
            if let Some(v) = as_json() {
                return (Payload::Json, v);
            }
            if let Some(t) = as_text() {
                if how.is_none() {
                    return (Payload::Text, Value::String(t));
                }
            }
        }
        Some(Payload::Text) => {
            if let Some(t) = as_text() {
                return (Payload::Text, Value::String(t));
            }
        }
        Some(Payload::Hex) => {}
    }
    (Payload::Hex, Value::String(hex(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn kind(p: Payload) -> &'static str {
    match p {
        Payload::Json => "json",
        Payload::Text => "text",
        Payload::Hex => "hex",
    }
}

/// Aligned columns: a header row and rows, two spaces apart.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table, coloured when [`colour`] says so.
    pub fn render(&self) -> String {
        self.render_in(colour())
    }

    /// The table; with `colour`, a bold header and each state (a STATE or OUTCOME column) in
    /// its colour (see [`state_colour`]). Widths count the text, never the escape codes.
    fn render_in(&self, colour: bool) -> String {
        let states: Vec<bool> = self.rows[0]
            .iter()
            .map(|h| h == "STATE" || h == "OUTCOME")
            .collect();
        let cols = self.rows[0].len();
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let lines: Vec<String> = self
            .rows
            .iter()
            .enumerate()
            .map(|(row, r)| {
                let cells: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(|(i, cell)| {
                        let pad = " ".repeat(widths[i] - cell.chars().count());
                        match (colour, row, state_colour(cell)) {
                            (false, _, _) => format!("{cell}{pad}"),
                            (true, 0, _) => format!("{}{pad}", paint("1", cell)),
                            (true, _, Some(code)) if states[i] => {
                                format!("{}{pad}", paint(code, cell))
                            }
                            _ => format!("{cell}{pad}"),
                        }
                    })
                    .collect();
                cells.join("  ").trim_end().to_string()
            })
            .collect();
        lines.join("\n")
    }
}

/// `name  value` lines, names padded to one width.
/// A `state` line's value is coloured as in tables.
pub fn pairs(items: &[(&str, String)]) -> String {
    let colour = colour();
    let w = items.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    items
        .iter()
        .map(|(k, v)| match state_colour(v) {
            Some(code) if colour && *k == "state" => format!("{k:<w$}  {}", paint(code, v)),
            _ => format!("{k:<w$}  {v}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether to colour what is printed: only when stdout is a terminal, never with `NO_COLOR`
/// set (<https://no-color.org>) or `TERM=dumb`; `CLICOLOR_FORCE=1` colours a pipe too (as
/// `ls`, cargo and others take it). `--json` output is never coloured.
pub fn colour() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if var("NO_COLOR").is_some() {
            return false;
        }
        if var("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
            return true;
        }
        std::io::stdout().is_terminal() && var("TERM").is_none_or(|t| t != "dumb")
    })
}

/// The ANSI colour of a job state or a child's outcome: dead red, completed green, active
/// cyan, delayed yellow, cancelled magenta; ready and pending plain.
fn state_colour(state: &str) -> Option<&'static str> {
    match state {
        "dead" | "failed" | "expired" => Some("31"),
        "completed" => Some("32"),
        "active" => Some("36"),
        "delayed" => Some("33"),
        "cancelled" => Some("35"),
        _ => None,
    }
}

fn paint(code: &str, text: &str) -> String {
    format!("\x1b[{code}m{text}\x1b[0m")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string())
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// A time (ms since the epoch) in the local time zone (`TZ`, else the system's), to the second:
/// `2026-11-27 22:34:05`. `--json` output keeps the ms.
pub(crate) fn local_time(ms: u64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_millis_opt(ms as i64) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M:%S").to_string()
        }
        chrono::LocalResult::None => ms.to_string(),
    }
}

/// A duration as people write it: `250 ms`, `4.5 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
pub(crate) fn duration(ms: u64) -> String {
    let (s, m, h, d) = (1000, 60_000, 3_600_000, 86_400_000);
    match ms {
        _ if ms < s => format!("{ms} ms"),
        _ if ms < 10 * s => format!("{:.1} s", ms as f64 / 1000.0),
        _ if ms < m => format!("{} s", ms / s),
        _ if ms < h => format!("{} min", ms / m),
        _ if ms < d => match (ms % h) / m {
            0 => format!("{} h", ms / h),
            rest => format!("{} h {rest} min", ms / h),
        },
        _ => match (ms % d) / h {
            0 => format!("{} d", ms / d),
            rest => format!("{} d {rest} h", ms / d),
        },
    }
}

/// A time (ms since the epoch) in local time, with how far it is from now:
/// `2026-11-27 22:34:05 (in 12 min)`, `2026-11-27 22:04:05 (18 min ago)`.
fn when(ms: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    if ms >= now {
        format!("{} (in {})", local_time(ms), duration(ms - now))
    } else {
        format!("{} ({} ago)", local_time(ms), duration(now - ms))
    }
}

/// The line telling where the next page starts, `next page: --cursor 'C'`, shell-quoted so it
/// can be pasted as printed (a cursor may hold `|`). Commands write it on stderr, after the page,
/// so that piped output holds only the page.
pub fn next_page(cursor: &Option<String>) -> Option<String> {
    cursor
        .as_ref()
        .map(|c| format!("next page: --cursor {}", shell_quote(c)))
}

/// `text` in single quotes for a POSIX shell (a `'` inside as `'\''`).
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cursor_is_shell_quoted_so_it_pastes_as_printed() {
        assert_eq!(shell_quote("dead:0:17|8c"), "'dead:0:17|8c'");
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        assert_eq!(next_page(&None), None);
    }

    #[test]
    fn preview_picks_json_then_text_then_hex() {
        assert_eq!(
            preview(br#"{"a":1}"#, None),
            (Payload::Json, json!({"a": 1}))
        );
        assert_eq!(
            preview(b"hi there", None),
            (Payload::Text, json!("hi there"))
        );
        assert_eq!(preview(&[0xff, 0x00], None), (Payload::Hex, json!("ff00")));
        assert_eq!(
            preview(b"12", Some(Payload::Text)),
            (Payload::Text, json!("12"))
        );
        assert_eq!(
            preview(b"hi", Some(Payload::Hex)),
            (Payload::Hex, json!("6869"))
        );
    }

    #[test]
    fn tables_align_and_errors_are_cut() {
        let mut t = Table::new(&["A", "BB"]);
        t.row(vec!["long".into(), "x".into()]);
        assert_eq!(t.render_in(false), "A     BB\nlong  x");
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }

    #[test]
    fn colour_marks_the_header_and_states_without_moving_the_columns() {
        let mut t = Table::new(&["ID", "STATE", "GROUP"]);
        t.row(vec!["a".into(), "dead".into(), "completed".into()]);
        t.row(vec!["bb".into(), "ready".into(), "-".into()]);
        let plain = t.render_in(false);
        let coloured = t.render_in(true);
        assert!(coloured.contains("\x1b[31mdead\x1b[0m"), "{coloured:?}");
        assert!(coloured.starts_with("\x1b[1mID\x1b[0m"), "{coloured:?}");
        // Only STATE/OUTCOME columns are painted; stripping the codes gives the plain table.
        assert!(!coloured.contains("\x1b[32m"), "{coloured:?}");
        let stripped = coloured
            .replace("\x1b[0m", "")
            .replace("\x1b[1m", "")
            .replace("\x1b[31m", "");
        assert_eq!(stripped, plain);
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(250), "250 ms");
        assert_eq!(duration(4_500), "4.5 s");
        assert_eq!(duration(42_000), "42 s");
        assert_eq!(duration(12 * 60_000 + 5_000), "12 min");
        assert_eq!(duration(3 * 3_600_000), "3 h");
        assert_eq!(duration(3 * 3_600_000 + 5 * 60_000), "3 h 5 min");
        assert_eq!(duration(2 * 86_400_000 + 4 * 3_600_000), "2 d 4 h");
    }

    #[test]
    fn a_page_that_found_none_yet_with_more_to_look_at_says_so_not_no_jobs() {
        let looking = tideq::JobPage {
            jobs: Vec::new(),
            cursor: Some("ready:0:g|123|7|j9".into()),
        };
        let text = job_page(&looking, false);
        assert!(
            text.starts_with("(none found yet; more to look at)"),
            "{text}"
        );
        assert_eq!(
            next_page(&looking.cursor).as_deref(),
            Some("next page: --cursor 'ready:0:g|123|7|j9'")
        );
        let done = tideq::JobPage {
            jobs: Vec::new(),
            cursor: None,
        };
        assert_eq!(job_page(&done, false), "(no jobs)");
    }
}

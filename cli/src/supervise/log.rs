//! The supervisor's log lines (on stderr): text, or JSON lines with `--log-format json`.

use serde_json::{json, Map, Value};

/// How lines are written, and the least level written.
#[derive(Clone, Copy)]
pub(crate) struct Logger {
    pub json: bool,
    /// 0 error, 1 warn, 2 info, 3 debug.
    pub level: u8,
}

pub(crate) fn level_of(name: &str) -> u8 {
    match name {
        "error" => 0,
        "warn" | "warning" => 1,
        "debug" | "trace" => 3,
        _ => 2,
    }
}

impl Logger {
    /// One line: `event` names what happened (child_started, child_exited, ...), `fields` the
    /// child, its pid and the like.
    pub fn line(&self, level: u8, event: &str, message: &str, fields: &[(&str, Value)]) {
        if level > self.level {
            return;
        }
        let name = ["error", "warn", "info", "debug"][level.min(3) as usize];
        if self.json {
            let mut m = Map::new();
            m.insert(
                "time".into(),
                json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            );
            m.insert("level".into(), json!(name));
            m.insert("event".into(), json!(event));
            for (k, v) in fields {
                m.insert((*k).into(), v.clone());
            }
            m.insert("message".into(), json!(message));
            eprintln!("{}", Value::Object(m));
        } else {
            eprintln!("tideq worker: {message}");
        }
    }

    pub fn info(&self, event: &str, message: &str, fields: &[(&str, Value)]) {
        self.line(2, event, message, fields);
    }

    pub fn warn(&self, event: &str, message: &str, fields: &[(&str, Value)]) {
        self.line(1, event, message, fields);
    }

    pub fn error(&self, event: &str, message: &str, fields: &[(&str, Value)]) {
        self.line(0, event, message, fields);
    }
}

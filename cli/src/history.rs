//! A job queue's history (the core's `Queue::history`, kept in Redis): `tideq history`.

use std::time::Duration;

use crate::args::Conn;
use crate::connect::{existing_job_queue, job_queue};
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq history QUEUE`: what the queue did in each step of the window, oldest first.
pub(crate) async fn history(
    c: &Conn,
    queue: &str,
    window: Duration,
    step: Duration,
    json: bool,
) -> Outcome {
    // The window and step are checked first (a usage error), then the queue's name (a typo).
    let points = job_queue(c, queue).await?.history(window, step).await?;
    existing_job_queue(c, queue).await?;
    print(&render::history(&points, json));
    Ok(())
}

/// A span as `--window` and `--step` take it: a number and a unit, `90s`, `30m` (or `30min`),
/// `1h`, `14d`; a bare number is seconds.
pub(crate) fn span(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let at = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(at);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?}: expected a number and a unit, like 90s, 30m, 1h, 14d"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        u => return Err(format!("{text:?}: unknown unit {u:?} (s, m, h, d)")),
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::span;
    use std::time::Duration;

    #[test]
    fn spans_read_with_their_unit() {
        assert_eq!(span("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(span("90"), Ok(Duration::from_secs(90)));
        assert_eq!(span("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(span("30min"), Ok(Duration::from_secs(1800)));
        assert_eq!(span("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(span("14d"), Ok(Duration::from_secs(14 * 86_400)));
        assert!(span("1w").is_err());
        assert!(span("h").is_err());
    }
}

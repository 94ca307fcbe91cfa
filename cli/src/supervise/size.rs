//! Sizes on the command line (`--max-memory-per-process 200MB`).

/// Bytes in `s`: a number with an optional unit, decimal (`K`/`KB`, `M`/`MB`, `G`/`GB`: powers
/// of 1000) or binary (`KiB`, `MiB`, `GiB`: powers of 1024), case-insensitive; a bare number is
/// bytes. `500000K` is 500 MB, as `ps` and Celery's `--max-memory-per-child` count kilobytes.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        format!(
            "{s:?} is not a size: write a number and a unit, e.g. 200MB, 1GiB, 500000K (units: \
             B, K/KB, M/MB, G/GB, KiB, MiB, GiB)"
        )
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "m" | "mb" => 1000 * 1000,
        "g" | "gb" => 1000 * 1000 * 1000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{s:?}: the size must be at least 1 byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_in_decimal_and_binary_units() {
        assert_eq!(parse_size("200MB"), Ok(200_000_000));
        assert_eq!(parse_size("200mb"), Ok(200_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("500000K"), Ok(500_000_000));
        assert_eq!(parse_size("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
    }

    #[test]
    fn bad_sizes_are_refused_with_the_units_named() {
        for bad in ["", "MB", "200XB", "-5MB", "1..2M", "abc", "0", "0MB"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains("size"), "{bad}: {e}");
        }
        assert!(parse_size("200XB")
            .unwrap_err()
            .contains("200MB, 1GiB, 500000K"));
    }
}

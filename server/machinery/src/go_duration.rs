//! Go's duration syntax (`300ms`, `1m30s`, `1.5h`), as Kubernetes' flags, configuration files
//! and the `timeout` query parameter write durations, and as Go prints one (`50m0s`) in the
//! messages Kubernetes gives.

use std::time::Duration;

/// Parses a Go duration (`300ms`, `1.5h`, `2m30s`, `0`); negative ones are refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..number_end].parse().map_err(|_| invalid())?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    if negative && total > 0.0 {
        return Err(format!("{s:?} must be > 0s"));
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

/// A duration of `nanos` nanoseconds as Go prints it: `0s`, `1.5ms`, `30s`, `50m0s`, `1h0m0s`.
pub fn format_nanos(nanos: i128) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n == 0 {
        return "0s".into();
    }
    if n < 1_000_000_000 {
        let (unit, scale) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", decimal(n, scale));
    }
    let seconds = decimal(n % 60_000_000_000, 1_000_000_000);
    let (minutes, hours) = ((n / 60_000_000_000) % 60, n / 3_600_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `value / scale` with the fraction's trailing zeros left out (`scale` a power of ten).
fn decimal(value: u128, scale: u128) -> String {
    let (whole, rest) = (value / scale, value % scale);
    match rest {
        0 => whole.to_string(),
        _ => format!("{whole}.{}", format!("{rest:0width$}", width = scale.ilog10() as usize).trim_end_matches('0')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for (s, want) in [("3s", 3.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("300ms", 0.3), ("0", 0.0), ("2h45m", 9900.0)] {
            assert_eq!(parse_duration(s).unwrap().as_secs_f64(), want, "{s}");
        }
        for bad in ["", "3", "s", "1x", "-1s", "1..5s", "invalid"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn printed_as_go_prints_them() {
        let s = 1_000_000_000i128;
        for (nanos, want) in [(0, "0s"), (1, "1ns"), (1_500_000, "1.5ms"), (s, "1s"), (30 * s, "30s"), (90 * s, "1m30s"), (3000 * s, "50m0s"), (3600 * s, "1h0m0s"), (-5 * s, "-5s"), (s + s / 4, "1.25s")] {
            assert_eq!(format_nanos(nanos), want);
        }
    }

    proptest::proptest! {
        /// The `timeout` parameter is a request's own text: any of it parses or is refused.
        #[test]
        fn any_text_parses_or_is_refused(s in "[-+0-9.nuµsmh]{0,12}|\\PC{0,12}") {
            let _ = parse_duration(&s);
        }

        #[test]
        fn whole_units_add_up(h in 0u64..100, m in 0u64..60, ms in 0u64..1000) {
            let parsed = parse_duration(&format!("{h}h{m}m{ms}ms")).unwrap();
            let want = (h * 3_600_000 + m * 60_000 + ms) as f64 / 1e3;
            proptest::prop_assert!((parsed.as_secs_f64() - want).abs() < 1e-6, "{parsed:?} against {want}");
        }
    }
}

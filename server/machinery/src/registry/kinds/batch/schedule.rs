//! CronJob schedules as Kubernetes reads them: five fields (minute, hour, day of month, month,
//! day of week) of values, ranges, steps and names, or a descriptor (`@daily`, `@every 1h`),
//! optionally after a `TZ=` or `CRON_TZ=` time zone; each problem in Kubernetes' words.

/// A field's range of values, and the names it accepts (months, days of the week).
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MONTHS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: [Bounds; 5] = [
    Bounds { min: 0, max: 59, names: &[] },
    Bounds { min: 0, max: 23, names: &[] },
    Bounds { min: 1, max: 31, names: &[] },
    Bounds { min: 1, max: 12, names: MONTHS },
    Bounds { min: 0, max: 6, names: DAYS },
];

const DESCRIPTORS: &[&str] = &["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/// What is wrong with a schedule, if anything.
pub fn problem(schedule: &str) -> Option<String> {
    if schedule.is_empty() {
        return Some("empty spec string".into());
    }
    let mut spec = schedule;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone, rest) = spec.split_once(' ').unwrap_or((spec, ""));
        let zone = zone.split_once('=').map_or("", |(_, z)| z);
        if let Some(e) = time_zone_problem(zone) {
            return Some(format!("provided bad location {zone}: {e}"));
        }
        spec = rest.trim();
    }
    if spec.starts_with('@') {
        return descriptor_problem(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return Some(format!("expected exactly {} fields, found {}: [{}]", FIELDS.len(), fields.len(), fields.join(" ")));
    }
    fields.iter().zip(&FIELDS).find_map(|(field, bounds)| field.split(',').filter(|r| !r.is_empty()).find_map(|r| range_problem(r, bounds)))
}

/// What loading a time zone by name says of it, if it is not one: empty and `UTC` are UTC,
/// `Local` the server's own.
pub fn time_zone_problem(zone: &str) -> Option<String> {
    let known = matches!(zone, "" | "UTC" | "Local") || zone.parse::<chrono_tz::Tz>().is_ok();
    (!known).then(|| format!("unknown time zone {zone}"))
}

fn descriptor_problem(spec: &str) -> Option<String> {
    match spec.strip_prefix("@every ") {
        Some(d) => (!is_duration(d)).then(|| format!("failed to parse duration {spec}: time: invalid duration \"{d}\"")),
        None => (!DESCRIPTORS.contains(&spec)).then(|| format!("unrecognized descriptor: {spec}")),
    }
}

/// A Go duration: numbers (with an optional fraction), each with a unit, optionally signed.
fn is_duration(d: &str) -> bool {
    let d = d.strip_prefix(['-', '+']).unwrap_or(d);
    if d == "0" {
        return true;
    }
    let mut rest = d;
    while !rest.is_empty() {
        let number = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        if number == 0 || rest[..number] == *"." {
            return false;
        }
        rest = &rest[number..];
        let Some(unit) = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"].into_iter().find(|u| rest.starts_with(u)) else { return false };
        rest = &rest[unit.len()..];
    }
    !d.is_empty()
}

/// One range of a field: `*`, `N`, `N-M` or a name, optionally with a `/step`.
fn range_problem(expr: &str, bounds: &Bounds) -> Option<String> {
    let parts: Vec<&str> = expr.split('/').collect();
    let ends: Vec<&str> = parts[0].split('-').collect();
    let (start, mut end) = if ends[0] == "*" || ends[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = match value(ends[0], bounds) {
            Ok(n) => n,
            Err(e) => return Some(e),
        };
        match ends.len() {
            1 => (start, start),
            2 => match value(ends[1], bounds) {
                Ok(end) => (start, end),
                Err(e) => return Some(e),
            },
            _ => return Some(format!("too many hyphens: {expr}")),
        }
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = match number(parts[1]) {
                Ok(n) => n,
                Err(e) => return Some(e),
            };
            if ends.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Some(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        Some(format!("beginning of range ({start}) below minimum ({}): {expr}", bounds.min))
    } else if end > bounds.max {
        Some(format!("end of range ({end}) above maximum ({}): {expr}", bounds.max))
    } else if start > end {
        Some(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"))
    } else if step == 0 {
        Some(format!("step of range should be a positive number: {expr}"))
    } else {
        None
    }
}

/// A field's value: one of its names (any case) or a number.
fn value(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    match bounds.names.iter().position(|n| n.eq_ignore_ascii_case(expr)) {
        Some(i) => Ok(i as u64 + if bounds.names == MONTHS { 1 } else { 0 }),
        None => number(expr),
    }
}

/// A whole number, as Go's `strconv.Atoi` reads one, that is not negative.
fn number(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": invalid syntax"));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": value out of range"));
    };
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_are_read_as_kubernetes_reads_them() {
        for ok in ["*/5 * * * *", "0 0 1 jan-jun MON", "@hourly", "@every 1h30m", "CRON_TZ=UTC 0 * * * *", "0-30/10 1,2 * * 0"] {
            assert_eq!(problem(ok), None, "{ok}");
        }
        assert_eq!(problem("*/5 * * *").unwrap(), "expected exactly 5 fields, found 4: [*/5 * * *]");
        assert_eq!(problem("every hour").unwrap(), "expected exactly 5 fields, found 2: [every hour]");
        assert_eq!(problem("60 * * * *").unwrap(), "end of range (60) above maximum (59): 60");
        assert_eq!(problem("0 0 0 * *").unwrap(), "beginning of range (0) below minimum (1): 0");
        assert_eq!(problem("5-1 * * * *").unwrap(), "beginning of range (5) beyond end of range (1): 5-1");
        assert_eq!(problem("*/0 * * * *").unwrap(), "step of range should be a positive number: */0");
        assert_eq!(problem("x * * * *").unwrap(), "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
        assert_eq!(problem("@often").unwrap(), "unrecognized descriptor: @often");
    }
}

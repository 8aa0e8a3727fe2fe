//! Small helpers the kinds' strategies share: setting a default, the messages of enumerations
//! and immutable fields, table columns' common parts, and the checks of common field types
//! (ports, addresses, names, labels, label selectors, int-or-percent values), with values printed
//! as Kubernetes prints them (Go structs, selectors).

use serde_json::{json, Value};

use super::go_json;
use crate::error::Cause;
use crate::registry::Column;

/// Kubernetes' words for a value that is not a DNS-1123 label.
pub(crate) use crate::meta::DNS1123_LABEL;

/// Sets `obj[key]` when absent or null.
pub(crate) fn set(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// A field that, when set, must hold one of `allowed` (listed in Kubernetes' order).
pub(crate) fn one_of(value: &Value, field: &str, allowed: &[&str], out: &mut Vec<Cause>) {
    if let Some(v) = value.as_str().filter(|v| !allowed.contains(v)) {
        out.push(unsupported(field.to_string(), v, allowed));
    }
}

pub(crate) fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    unsupported_shown(field, &format!("\"{value}\""), supported)
}

/// `Unsupported value: V: supported values: ...`, the value already printed (a Go struct).
pub(crate) fn unsupported_shown(field: impl Into<String>, shown: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause::new("FieldValueNotSupported", field, format!("Unsupported value: {shown}: supported values: {}", list.join(", ")))
}

/// Kubernetes' words for a field that may not change.
pub(crate) const IMMUTABLE: &str = "field is immutable";

/// `field: Invalid value: ...: field is immutable` unless `old` and `new` agree at `pointer`.
pub(crate) fn unchanged(old: &Value, new: &Value, pointer: &str, out: &mut Vec<Cause>) {
    let (was, now) = (old.pointer(pointer), new.pointer(pointer));
    if was != now {
        let field = pointer.trim_start_matches('/').replace('/', ".");
        out.push(invalid(field, now.unwrap_or(&Value::Null), IMMUTABLE));
    }
}

/// A struct fixed at creation: a change (by Kubernetes' semantic comparison: quantities by
/// value) is refused showing the new value as Go prints Kubernetes' internal `struct_name`
/// (`null` when unset).
pub(crate) fn unchanged_struct(old: &Value, new: &Value, pointer: &str, struct_name: &str, out: &mut Vec<Cause>) {
    let shown = |v: &Value| match v.pointer(pointer) {
        None | Some(Value::Null) => "null".to_string(),
        Some(v) => go_json::compact(v, struct_name),
    };
    let now = shown(new);
    if shown(old) != now {
        out.push(invalid_shown(pointer.trim_start_matches('/').replace('/', "."), &now, IMMUTABLE));
    }
}

pub(crate) const fn col(name: &'static str, type_: &'static str, priority: u32) -> Column {
    Column { name, type_, format: "", description: "", priority }
}

pub(crate) const AGE: Column = col("Age", "date", 0);

pub(crate) fn age(obj: &Value) -> Value {
    obj["metadata"]["creationTimestamp"].clone()
}

pub(crate) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// How many entries a map holds.
pub(crate) fn keys(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len())
}

/// The items of a list, none when it is absent.
pub(crate) fn entries(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// How many items a list holds.
pub(crate) fn items(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

pub(crate) fn text_or_none(v: &Value) -> Value {
    json!(v.as_str().filter(|s| !s.is_empty()).unwrap_or("<none>"))
}

/// A label selector as kubectl prints it: `k=v` for each label, `k in (a,b)` and the like for
/// each expression, comma-separated; `<none>` when empty.
pub(crate) fn selector(sel: &Value) -> String {
    let mut parts: Vec<String> = sel["matchLabels"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A map of labels as kubectl prints it (`k=v,...`), `<none>` when empty.
pub(crate) fn labels(map: &Value) -> String {
    let parts: Vec<String> = map.as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// The names (or images) of a pod spec's containers, comma-separated.
pub(crate) fn containers(spec: &Value, field: &str) -> Value {
    let names: Vec<&str> = spec["containers"].as_array().into_iter().flatten().filter_map(|c| c[field].as_str()).collect();
    json!(names.join(","))
}

/// `field: Invalid value: V: detail`, the value printed as Kubernetes prints it (strings
/// quoted, numbers and objects as JSON).
pub(crate) fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Cause {
    invalid_shown(field, &value.to_string(), detail)
}

/// `field: Invalid value: V: detail`, the value already printed (a Go struct, a selector).
pub(crate) fn invalid_shown(field: impl Into<String>, shown: &str, detail: &str) -> Cause {
    match detail {
        "" => Cause::new("FieldValueInvalid", field, format!("Invalid value: {shown}")),
        _ => Cause::new("FieldValueInvalid", field, format!("Invalid value: {shown}: {detail}")),
    }
}

/// `Duplicate value: V`.
pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> Cause {
    Cause::new("FieldValueDuplicate", field, format!("Duplicate value: {value}"))
}

/// `Forbidden: detail`.
pub fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
}

/// `Required value: detail` (`Required value` when there is no detail).
pub(crate) fn required(field: impl Into<String>, detail: &str) -> Cause {
    if detail.is_empty() {
        return Cause::required(field);
    }
    Cause::new("FieldValueRequired", field, format!("Required value: {detail}"))
}

/// A string field that must be set and non-empty (`Required value`).
pub(crate) fn required_str(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_str().is_none_or(str::is_empty) {
        out.push(Cause::required(field));
    }
}

/// An integer field that, when set, must be at least `min` ("must be greater than or equal to").
pub(crate) fn at_least(v: &Value, field: &str, min: i64, out: &mut Vec<Cause>) {
    if v.as_i64().is_some_and(|n| n < min) {
        out.push(invalid(field, v, &format!("must be greater than or equal to {min}")));
    }
}

/// An integer field that, when set, must be above zero ("must be greater than 0").
pub(crate) fn positive(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_i64().is_some_and(|n| n <= 0) {
        out.push(invalid(field, v, "must be greater than 0"));
    }
}

/// A port number, when set: 1 to 65535.
pub(crate) fn port(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_i64().is_some_and(|n| !(1..=65535).contains(&n)) {
        out.push(invalid(field, v, "must be between 1 and 65535, inclusive"));
    }
}

/// Kubernetes' words for a value that is not an IP address.
pub(crate) const IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
/// Kubernetes' words for a value that is not a CIDR.
pub(crate) const CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// An IP address, parsed as Kubernetes parses one (no leading zeros, no zone).
pub(crate) fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    s.parse().ok()
}

/// A CIDR `address/prefix`: the address and the prefix length, when both parse and fit.
pub(crate) fn parse_cidr(s: &str) -> Option<(std::net::IpAddr, u8)> {
    let (ip, bits) = s.split_once('/')?;
    let ip = parse_ip(ip)?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

/// A string field, when set, that must be an IP address.
pub(crate) fn ip(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| parse_ip(s).is_none()) {
        out.push(Cause::invalid(field, s, IP));
    }
}

/// A string field, when set, that must be a CIDR of a network, as Kubernetes' strict CIDR
/// validation (on since 1.34) checks a legacy field.
pub(crate) fn cidr(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(problem) = v.as_str().and_then(cidr_problem) {
        out.push(Cause::invalid(field, v.as_str().unwrap_or_default(), problem));
    }
}

/// What is wrong with a CIDR under strict validation, if anything.
pub(crate) fn cidr_problem(s: &str) -> Option<&'static str> {
    let Some((ip, bits)) = parse_cidr(s) else {
        // Go's lenient parser takes leading zeros, which strict validation then names.
        let unpadded = s.split(['.', '/']).all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            && parse_cidr(&s.split('/').map(|half| half.split('.').map(|p| p.trim_start_matches('0')).map(|p| if p.is_empty() { "0" } else { p }).collect::<Vec<_>>().join(".")).collect::<Vec<_>>().join("/")).is_some();
        return Some(if unpadded { "must not have leading 0s in IP or prefix length" } else { CIDR });
    };
    if ip.to_canonical() != ip {
        return Some("must not have an IPv4-mapped IPv6 address");
    }
    let network = ipnet::IpNet::new(ip, bits).ok()?.trunc().addr();
    (network != ip).then_some("must not have bits set beyond the prefix length")
}

/// A string field, when set, that must be a DNS-1123 subdomain (as object names).
pub(crate) fn dns_subdomain(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| !crate::meta::is_dns_subdomain(s)) {
        out.push(Cause::invalid(field, s, crate::meta::DNS1123_SUBDOMAIN));
    }
}

/// A string field, when set, that must be a DNS-1123 label.
pub(crate) fn dns_label(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| !crate::meta::is_dns_label(s, 63, false)) {
        out.push(Cause::invalid(field, s, DNS1123_LABEL));
    }
}

/// A string field, when set, that must be a qualified name (`prefix/name`, as label keys); an
/// empty one is refused twice, as Kubernetes does.
pub(crate) fn qualified_name(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str() {
        crate::meta::validate_qualified_name(s, field, out);
    }
}

/// Each entry of a list, keyed by `key`, must be unique: the second of two is a duplicate.
pub(crate) fn unique<'a>(list: &'a Value, field: &str, key: impl Fn(&'a Value) -> &'a Value, out: &mut Vec<Cause>) {
    let mut seen = Vec::new();
    for (i, item) in list.as_array().into_iter().flatten().enumerate() {
        let k = key(item);
        if k.is_null() {
            continue;
        }
        if seen.contains(&k) {
            out.push(duplicate(format!("{field}[{i}]"), k));
        } else {
            seen.push(k);
        }
    }
}

/// A Go struct as Kubernetes prints one in a message (`{"Type":"Recreate","RollingUpdate":null}`):
/// each field under its Go name, in declaration order, with its value already printed.
pub(crate) fn go_struct(fields: &[(&str, String)]) -> String {
    let parts: Vec<String> = fields.iter().map(|(name, value)| format!("\"{name}\":{value}")).collect();
    format!("{{{}}}", parts.join(","))
}

/// A label selector as Kubernetes prints one: `matchLabels` before `matchExpressions`, each
/// left out when empty; `null` when there is none.
pub(crate) fn selector_shown(sel: &Value) -> String {
    if !sel.is_object() {
        return "null".into();
    }
    let parts: Vec<String> = ["matchLabels", "matchExpressions"]
        .iter()
        .filter(|k| keys(&sel[**k]) + items(&sel[**k]) > 0)
        .map(|k| format!("\"{k}\":{}", sel[*k]))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Kubernetes' words for a string that is not a percentage.
const PERCENT: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The number of a percentage (`25%`), when `s` is one.
fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))?;
    Some(digits.parse().unwrap_or(0))
}

/// An int-or-string field, when set: a count of at least 0, or a percentage.
pub(crate) fn int_or_percent(v: &Value, field: &str, out: &mut Vec<Cause>) {
    match v {
        Value::String(s) if percent(s).is_none() => out.push(invalid(field, v, PERCENT)),
        _ => at_least(v, field, 0, out),
    }
}

/// An int-or-string field, when a percentage, may not exceed 100%.
pub(crate) fn at_most_100_percent(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_str().and_then(percent).is_some_and(|p| p > 100) {
        out.push(invalid(field, v, "must not be greater than 100%"));
    }
}

/// What an int-or-string amounts to: the count, the percentage's number, or a numeric string's
/// value; 0 otherwise.
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    match v.as_str() {
        Some(s) => percent(s).or_else(|| s.parse().ok()).unwrap_or(0),
        None => int(v),
    }
}

/// A label selector's own rules, when it is set: valid label keys and values, known operators,
/// values where the operator needs them and none where it does not. Returns whether it is
/// valid, which is whether Kubernetes can turn it into a selector.
pub(crate) fn label_selector(sel: &Value, field: &str, out: &mut Vec<Cause>) -> bool {
    let before = out.len();
    crate::meta::validate_labels(&sel["matchLabels"], &format!("{field}.matchLabels"), out);
    for (i, e) in sel["matchExpressions"].as_array().into_iter().flatten().enumerate() {
        let at = format!("{field}.matchExpressions[{i}]");
        let values = items(&e["values"]);
        match e["operator"].as_str().unwrap_or_default() {
            "In" | "NotIn" if values == 0 => out.push(required(format!("{at}.values"), "must be specified when `operator` is 'In' or 'NotIn'")),
            "Exists" | "DoesNotExist" if values > 0 => out.push(forbidden(format!("{at}.values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => out.push(invalid(format!("{at}.operator"), &e["operator"], "not a valid selector operator")),
        }
        qualified_name(&e["key"], &format!("{at}.key"), out);
        for (j, v) in e["values"].as_array().into_iter().flatten().enumerate() {
            crate::meta::validate_label_value(v.as_str().unwrap_or_default(), &format!("{at}.values[{j}]"), out);
        }
    }
    out.len() == before
}

/// A CEL expression, when set, that must parse.
pub(crate) fn cel(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(e) = v.as_str().and_then(crate::expr::syntax_error) {
        out.push(invalid(field, v, &e));
    }
}

/// A label selector that is set and selects everything (no labels, no expressions).
pub(crate) fn selects_all(sel: &Value) -> bool {
    sel.is_object() && keys(&sel["matchLabels"]) + items(&sel["matchExpressions"]) == 0
}

/// Whether a label selector selects `labels`; no selector selects nothing.
pub(crate) fn selects(sel: &Value, labels: &Value) -> bool {
    sel.is_object() && crate::selector::label_selector_matches(sel, labels.as_object())
}

/// A string field, when set, that can be a path segment: not `.` or `..`, without `/` or `%`.
pub(crate) fn path_segment(v: &Value, field: &str, out: &mut Vec<Cause>) {
    let Some(s) = v.as_str() else { return };
    for problem in crate::meta::path_segment_problems(s) {
        out.push(Cause::invalid(field, s, &problem));
    }
}

/// An endpoint's address (Endpoints' and EndpointSlices'), which must be an IP address.
pub(crate) fn endpoint_ip(s: &str, field: &str, out: &mut Vec<Cause>) -> Option<std::net::IpAddr> {
    let ip = parse_ip(s).map(|ip| ip.to_canonical());
    if ip.is_none() {
        out.push(Cause::invalid(field, s, "must be a valid IP address"));
    }
    ip
}

/// The items of the list `v[key]`, to change in place (none when absent: nothing is added).
pub(crate) fn items_mut<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten()
}

/// A quantity, when set, that may not be negative.
pub(crate) fn nonnegative_quantity(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| crate::expr::quantity::parse(s).is_ok_and(|q| q.sign() < 0)) {
        out.push(Cause::invalid(field, s, "must be greater than or equal to 0"));
    }
}

/// A string, when set, that must be a port's name: up to 15 lowercase alphanumerics and
/// hyphens, with a letter, no hyphen at either end nor two together (each broken rule a cause).
pub(crate) fn port_name(v: &Value, field: &str, out: &mut Vec<Cause>) {
    let Some(s) = v.as_str() else { return };
    let mut problems = Vec::new();
    if s.len() > 15 {
        problems.push("must be no more than 15 characters");
    }
    if !s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-') {
        problems.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        problems.push("must contain at least one letter (a-z)");
    }
    if s.contains("--") {
        problems.push("must not contain consecutive hyphens");
    }
    if s.starts_with('-') || s.ends_with('-') {
        problems.push("must not begin or end with a hyphen");
    }
    out.extend(problems.into_iter().map(|p| Cause::invalid(field, s, p)));
}

/// A quantity, when set, that must be above zero.
pub(crate) fn positive_quantity(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_str().and_then(|s| crate::expr::quantity::parse(s).ok()).is_some_and(|q| q.sign() <= 0) {
        out.push(invalid(field, v, "must be greater than zero"));
    }
}

/// An endpoint's IP address that is not unspecified, loopback or link-local.
pub fn routable_ip(ip: std::net::IpAddr, s: &str, field: &str, out: &mut Vec<Cause>) {
    let (link_local, link_local_multicast) = match ip {
        std::net::IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
        std::net::IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0 == 0xfe80, v6.segments()[0] & 0xff0f == 0xff02),
    };
    if ip.is_unspecified() {
        out.push(Cause::invalid(field, s, &format!("may not be unspecified ({s})")));
    }
    if ip.is_loopback() {
        out.push(Cause::invalid(field, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"));
    }
    if link_local {
        out.push(Cause::invalid(field, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"));
    }
    if link_local_multicast {
        out.push(Cause::invalid(field, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"));
    }
}

/// An IP address as new fields take one: no IPv4-mapped IPv6 address, in canonical form.
pub(crate) fn strict_ip(s: &str, field: &str, out: &mut Vec<Cause>) {
    match parse_ip(s) {
        None => out.push(Cause::invalid(field, s, IP)),
        Some(ip) if ip.to_canonical() != ip => out.push(Cause::invalid(field, s, "must not be an IPv4-mapped IPv6 address")),
        Some(ip) if ip.to_string() != s => out.push(Cause::invalid(field, s, &format!("must be in canonical form (\"{ip}\")"))),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(check: impl FnOnce(&mut Vec<Cause>)) -> Vec<String> {
        let mut out = Vec::new();
        check(&mut out);
        out.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn int_or_percent_values() {
        assert!(messages(|o| int_or_percent(&json!("25%"), "f", o)).is_empty());
        assert_eq!(messages(|o| int_or_percent(&json!(-1), "f", o)), ["f: Invalid value: -1: must be greater than or equal to 0"]);
        assert_eq!(messages(|o| int_or_percent(&json!("x"), "f", o))[0], format!("f: Invalid value: \"x\": {PERCENT}"));
        assert_eq!(messages(|o| at_most_100_percent(&json!("150%"), "f", o)), ["f: Invalid value: \"150%\": must not be greater than 100%"]);
        assert_eq!((int_or_percent_value(&json!("25%")), int_or_percent_value(&json!(3)), int_or_percent_value(&json!("x"))), (25, 3, 0));
    }

    #[test]
    fn label_selectors() {
        let sel = json!({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]}], "matchLabels": {"k": "v"}});
        let mut out = Vec::new();
        assert!(!label_selector(&sel, "s", &mut out));
        let fields: Vec<&str> = out.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["s.matchExpressions[0].values", "s.matchExpressions[1].values"]);
        assert_eq!(selector_shown(&sel), r#"{"matchLabels":{"k":"v"},"matchExpressions":[{"key":"a","operator":"In"},{"key":"b","operator":"Exists","values":["x"]}]}"#);
        assert_eq!(selector_shown(&Value::Null), "null");
        assert!(selects_all(&json!({})) && !selects_all(&Value::Null));
        assert!(!selects(&Value::Null, &json!({"k": "v"})) && selects(&json!({"matchLabels": {"k": "v"}}), &json!({"k": "v"})));
    }

    #[test]
    fn go_structs_keep_their_field_order() {
        assert_eq!(go_struct(&[("Type", json!("Recreate").to_string()), ("RollingUpdate", "null".into())]), r#"{"Type":"Recreate","RollingUpdate":null}"#);
    }
}

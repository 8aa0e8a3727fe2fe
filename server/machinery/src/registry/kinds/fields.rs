//! Small helpers the kinds' strategies share: setting a default, the messages of enumerations
//! and immutable fields, table columns' common parts, and the checks of common field formats
//! (names, addresses, ports, quantities, label selectors) in Kubernetes' words, values printed
//! as Kubernetes prints them.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::Column;

/// Sets `obj[key]` when absent or null.
pub(crate) fn set(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// A field that, when set, must hold one of `allowed` (listed in Kubernetes' order).
pub(crate) fn one_of(value: &Value, field: &str, allowed: &[&str], out: &mut Vec<Cause>) {
    if let Some(v) = value.as_str().filter(|v| !allowed.contains(v)) {
        let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
        out.push(Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{v}\": supported values: {}", list.join(", "))));
    }
}

pub(crate) fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{value}\": supported values: {}", list.join(", ")))
}

/// A list as Go's `%v` prints a string slice: `[a b]`.
pub(crate) fn go_list(v: &Value) -> String {
    let items: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    format!("[{}]", items.join(" "))
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

/// `field: Invalid value: V: detail`, the value already printed (as Go prints a struct).
pub(crate) fn invalid_shown(field: impl Into<String>, shown: &str, detail: &str) -> Cause {
    Cause::new("FieldValueInvalid", field, format!("Invalid value: {shown}: {detail}"))
}

/// `Duplicate value: V`.
pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> Cause {
    Cause::new("FieldValueDuplicate", field, format!("Duplicate value: {value}"))
}

/// `Forbidden: detail`.
pub(crate) fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
}

/// `Required value: detail`.
pub(crate) fn required(field: impl Into<String>, detail: &str) -> Cause {
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
/// Kubernetes' words for a value that is not a DNS-1123 label.
pub(crate) const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

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

/// A string field, when set, that must be a CIDR.
pub(crate) fn cidr(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| parse_cidr(s).is_none()) {
        out.push(Cause::invalid(field, s, CIDR));
    }
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

/// A string field, when set, that must be a qualified name (`prefix/name`, as label keys).
pub(crate) fn qualified_name(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some((s, p)) = v.as_str().and_then(|s| crate::meta::qualified_name_problem(s).map(|p| (s, p))) {
        out.push(Cause::invalid(field, s, p));
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

/// A field of one of Kubernetes' internal types, as Go prints the type in a cause's value: named
/// by its JSON key with a capital first letter, shown from the JSON value.
pub(crate) enum Go {
    /// A string (`""` when unset).
    Text(&'static str),
    /// A pointer, list or map (`null` when unset), shown as it is.
    Nullable(&'static str),
    /// A struct held by value (its fields' zero values when unset).
    Struct(&'static str, &'static [Go]),
}

/// `v` as Go prints a struct of `fields`: `{"Name":"x","Keys":null}`.
pub(crate) fn go_struct(v: &Value, fields: &[Go]) -> String {
    let shown: Vec<String> = fields
        .iter()
        .map(|f| {
            let (key, value) = match f {
                Go::Text(k) => (k, json!(v[*k].as_str().unwrap_or_default()).to_string()),
                Go::Nullable(k) => (k, v[*k].to_string()),
                Go::Struct(k, inner) => (k, go_struct(&v[*k], inner)),
            };
            let mut name = key.chars();
            let first = name.next().map(|c| c.to_ascii_uppercase()).unwrap_or_default();
            format!("\"{first}{}\":{value}", name.as_str())
        })
        .collect();
    format!("{{{}}}", shown.join(","))
}

/// Kubernetes' words for a label value that is not one.
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// A string, when set, that must be a label value.
pub(crate) fn label_value(v: &Value, field: &str, out: &mut Vec<Cause>) {
    match v.as_str() {
        Some(s) if s.len() > 63 => out.push(Cause::invalid(field, s, "must be no more than 63 characters")),
        Some(s) if !crate::meta::label_value_ok(s) => out.push(Cause::invalid(field, s, LABEL_VALUE)),
        _ => {}
    }
}

/// A map of labels (as a node selector's): qualified names to label values, each cause
/// reported at the map.
pub(crate) fn label_map(map: &Value, field: &str, out: &mut Vec<Cause>) {
    for (k, v) in map.as_object().into_iter().flatten() {
        qualified_name(&json!(k), field, out);
        label_value(v, field, out);
    }
}

/// A label selector: its labels, and each expression's operator, key and values.
pub(crate) fn label_selector(sel: &Value, field: &str, out: &mut Vec<Cause>) {
    label_map(&sel["matchLabels"], &format!("{field}.matchLabels"), out);
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
            label_value(v, &format!("{at}.values[{j}]"), out);
        }
    }
}

/// A quantity, when set, that may not be negative.
pub(crate) fn nonnegative_quantity(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.as_str().filter(|s| crate::expr::quantity::parse(s).is_ok_and(|q| q.sign() < 0)) {
        out.push(Cause::invalid(field, s, "must be greater than or equal to 0"));
    }
}

/// A quantity, when set, that must be above zero.
pub(crate) fn positive_quantity(v: &Value, field: &str, out: &mut Vec<Cause>) {
    if v.as_str().and_then(|s| crate::expr::quantity::parse(s).ok()).is_some_and(|q| q.sign() <= 0) {
        out.push(invalid(field, v, "must be greater than zero"));
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

/// An endpoint's IP address that is not unspecified, loopback or link-local.
pub(crate) fn routable_ip(ip: std::net::IpAddr, s: &str, field: &str, out: &mut Vec<Cause>) {
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

/// A string that names one segment of a URL path: not `.` or `..`, without `/` or `%`.
pub(crate) fn path_segment(s: &str, field: &str, out: &mut Vec<Cause>) {
    if s == "." || s == ".." {
        out.push(Cause::invalid(field, s, &format!("may not be '{s}'")));
        return;
    }
    for illegal in ["/", "%"].into_iter().filter(|c| s.contains(c)) {
        out.push(Cause::invalid(field, s, &format!("may not contain '{illegal}'")));
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

/// The items of the list `v[key]`, to change in place (none when absent: nothing is added).
pub(crate) fn items_mut<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten()
}

//! Object metadata rules shared by every kind: names, labels, generated values, and the fields
//! the server owns (uid, creationTimestamp, generation, resourceVersion).

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::error::Cause;
use crate::registry::ResourceInfo;

/// RFC 3339 at one-second precision, as Kubernetes writes timestamps.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `metadata` of an object, created if absent.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata is an object")
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Five characters from Kubernetes' generateName alphabet (no vowels, no look-alikes).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// Kubernetes' words for a name that is not a DNS subdomain.
pub const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Kubernetes' words for a value that is not a DNS-1123 label.
pub const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Kubernetes' words for a name that is not a DNS-1035 label.
pub const DNS1035_LABEL: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

pub fn is_dns_label(s: &str, max: usize, alpha_first: bool) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && (b[0].is_ascii_lowercase() || (!alpha_first && b[0].is_ascii_digit()))
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
}

pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|part| is_dns_label(part, 253, false))
}

/// What is wrong with a name that must be usable as one segment of a URL path: each problem.
pub fn path_segment_problems(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
}

/// Which name format a resource's objects must have.
fn name_problems(group: &str, resource: &str, name: &str) -> Vec<String> {
    match (group, resource) {
        ("", "namespaces") if name.contains('.') => vec!["must not contain dots".into()],
        ("", "namespaces") if !is_dns_label(name, 63, false) => vec![DNS1123_LABEL.into()],
        ("", "services") if !is_dns_label(name, 63, true) => vec![DNS1035_LABEL.into()],
        // Names Kubernetes does not check beyond their use in a URL: RBAC's, APIServices',
        // core Events' (kubelets name theirs `pod.17a8c4e5...`), PodDisruptionBudgets' and
        // CertificateSigningRequests'.
        (_, "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings" | "apiservices")
        | ("", "events")
        | ("policy", "poddisruptionbudgets")
        | ("certificates.k8s.io", "certificatesigningrequests") => path_segment_problems(name),
        // An IPAddress is named by its address, which its kind's validation checks.
        ("", "namespaces" | "services") | ("networking.k8s.io", "ipaddresses") => Vec::new(),
        _ if !is_dns_subdomain(name) => vec![DNS1123_SUBDOMAIN.into()],
        _ => Vec::new(),
    }
}

/// Kubernetes' words for a name part that is not one.
const NAME_PART: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// Every problem of a qualified name (`prefix/name` or `name`, as label keys), as Kubernetes'
/// `IsLabelKey` lists them.
pub fn label_key_problems(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut out = Vec::new();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    out.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !prefix.split('.').all(|part| is_dns_label(part, 253, false)) {
                    out.push(format!("prefix part {}", DNS1123_SUBDOMAIN));
                }
            }
            name
        }
        _ => return vec![format!("a valid label key {NAME_PART} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")],
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".to_string());
    }
    let b = name.as_bytes();
    let valid = !b.is_empty() && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) && b[0].is_ascii_alphanumeric() && b[b.len() - 1].is_ascii_alphanumeric();
    if !valid {
        out.push(format!("name part {NAME_PART}"));
    }
    out
}

/// The first problem of a qualified name, if any.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    label_key_problems(key).into_iter().next()
}

/// Validates the metadata every object shares: name format, labels and annotations.
pub fn validate(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    match meta_str(obj, "name") {
        None | Some("") => causes.push(Cause::new("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")),
        Some(name) => {
            for problem in name_problems(info.group, info.resource, name) {
                causes.push(Cause::invalid("metadata.name", name, &problem));
            }
        }
    }
    causes.extend(validate_labels_and_annotations(obj));
    causes.extend(owner_references(&obj["metadata"]["ownerReferences"]));
    // Kubernetes' own kinds check finalizer names against its standard ones; definitions,
    // APIServices and custom resources are validated by the generic metadata rules only.
    let core_rules = !crate::registry::custom::is_custom(info) && !matches!(info.group, "apiextensions.k8s.io" | "apiregistration.k8s.io");
    causes.extend(finalizers(&obj["metadata"]["finalizers"], core_rules));
    causes
}

/// Owner references: each names an API version with a version, a kind, a name and a uid, never
/// a core Event, and at most one is the controller.
fn owner_references(refs: &Value) -> Vec<Cause> {
    const FIELD: &str = "metadata.ownerReferences";
    let shown = |r: &Value| crate::registry::kinds::go_json::compact(r, "metav1.OwnerReference");
    let mut out = Vec::new();
    let mut controller: Option<String> = None;
    for r in refs.as_array().map(Vec::as_slice).unwrap_or_default() {
        let text = |k: &str| r[k].as_str().unwrap_or_default();
        // schema.ParseGroupVersion: `v`, `g/v`; anything else has no version.
        let version = match text("apiVersion").split('/').collect::<Vec<_>>()[..] {
            [v] | [_, v] => v,
            _ => "",
        };
        if version.is_empty() {
            out.push(Cause::invalid(format!("{FIELD}.apiVersion"), text("apiVersion"), "version must not be empty"));
        }
        for key in ["kind", "name", "uid"] {
            if text(key).is_empty() {
                out.push(Cause::invalid(format!("{FIELD}.{key}"), "", "must not be empty"));
            }
        }
        if text("apiVersion") == "v1" && text("kind") == "Event" {
            out.push(Cause::new("FieldValueInvalid", FIELD, format!("Invalid value: {}: /v1, Kind=Event is disallowed from being an owner", shown(r))));
        }
        if r["controller"] == true {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => {
                    let all: Vec<String> = refs.as_array().into_iter().flatten().map(shown).collect();
                    out.push(Cause::new(
                        "FieldValueInvalid",
                        FIELD,
                        format!("Invalid value: [{}]: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}", all.join(",")),
                    ));
                }
                None => controller = Some(this),
            }
        }
    }
    out
}

/// The finalizers Kubernetes defines itself, which need no domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Finalizers: qualified names, not both `orphan` and `foregroundDeletion`; under the core rules
/// a name without a domain must be one of Kubernetes' own.
fn finalizers(list: &Value, core_rules: bool) -> Vec<Cause> {
    const FIELD: &str = "metadata.finalizers";
    let names: Vec<&str> = list.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Vec::new();
    for name in &names {
        validate_qualified_name(name, FIELD, &mut out);
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        out.push(Cause::new("FieldValueInvalid", FIELD, format!("Invalid value: {list}: finalizer orphan and foregroundDeletion cannot be both set")));
    }
    if core_rules {
        for (i, name) in names.iter().enumerate().filter(|(_, n)| !n.contains('/') && !STANDARD_FINALIZERS.contains(n)) {
            out.push(Cause::invalid(format!("{FIELD}[{i}]"), name, "name is neither a standard finalizer name nor is it fully qualified"));
        }
    }
    out
}

/// Kubernetes' words for a value that is not a label value.
pub const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// A label value's problems: its length, then its characters.
pub fn validate_label_value(v: &str, field: &str, causes: &mut Vec<Cause>) {
    if v.len() > 63 {
        causes.push(Cause::invalid(field, v, "must be no more than 63 characters"));
    }
    let b = v.as_bytes();
    let edges = |c: Option<&u8>| c.is_none_or(u8::is_ascii_alphanumeric);
    if !(b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) && edges(b.first()) && edges(b.last())) {
        causes.push(Cause::invalid(field, v, LABEL_VALUE));
    }
}

/// A qualified name's problems (an empty one is refused twice, as Kubernetes does).
pub fn validate_qualified_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    for p in label_key_problems(name) {
        causes.push(Cause::invalid(field, name, &p));
    }
}

/// Validates a map of labels (keys qualified names, values label values), reported at `field`.
pub fn validate_labels(labels: &Value, field: &str, causes: &mut Vec<Cause>) {
    for (k, v) in labels.as_object().into_iter().flatten() {
        validate_qualified_name(k, field, causes);
        validate_label_value(v.as_str().unwrap_or_default(), field, causes);
    }
}

/// Validates an object's labels and annotations.
pub fn validate_labels_and_annotations(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let meta = obj.get("metadata");
    if let Some(labels) = meta.and_then(|m| m.get("labels")) {
        validate_labels(labels, "metadata.labels", &mut causes);
    }
    if let Some(annotations) = meta.and_then(|m| m.get("annotations")).and_then(Value::as_object) {
        let total: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        for k in annotations.keys() {
            for p in label_key_problems(&k.to_ascii_lowercase()) {
                causes.push(Cause::invalid("metadata.annotations", k, &p));
            }
        }
        if total > 256 * 1024 {
            causes.push(Cause::new("FieldValueTooLong", "metadata.annotations", "Too long: must have at most 262144 bytes"));
        }
    }
    causes
}

/// Sets the values the server generates on create. `uid` and the timestamp are fixed here,
/// before proposing, so every replica stores identical bytes.
pub fn stamp_create(info: &ResourceInfo, obj: &mut Value) {
    let m = meta_mut(obj);
    m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    m.insert("creationTimestamp".into(), json!(now()));
    m.remove("resourceVersion");
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("selfLink");
    if info.has_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
}

/// Carries the server-owned metadata of `old` into `new` on update, and bumps `generation`
/// when anything but metadata and status changed.
pub fn carry_over(info: &ResourceInfo, old: &Value, new: &mut Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let spec_changed = strip_meta_status(old) != strip_meta_status(new);
    let m = meta_mut(new);
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "namespace", "name"] {
        match old_meta.get(field) {
            Some(v) => m.insert(field.into(), v.clone()),
            None => m.remove(field),
        };
    }
    m.remove("resourceVersion");
    m.remove("selfLink");
    let generation = old_meta.get("generation").and_then(Value::as_i64);
    match generation {
        Some(g) if info.has_generation => {
            let bumped = spec_changed && !info.ops.strategy.generation_fixed;
            m.insert("generation".into(), json!(if bumped { g + 1 } else { g }));
        }
        _ => {
            m.remove("generation");
        }
    }
}

fn strip_meta_status(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("metadata");
        o.remove("status");
    }
    v
}

/// The object without `metadata.resourceVersion`, to tell a no-op update from a change.
pub fn without_rv(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns_subdomain("a.b-c"));
        assert!(!is_dns_subdomain("A"));
        // Only the whole name is bounded (253), not its parts: a 70-character name is one.
        assert!(is_dns_subdomain(&"a".repeat(70)) && !is_dns_subdomain(&"a".repeat(254)));
        assert!(!name_problems("", "services", "1abc").is_empty());
        assert!(name_problems("", "configmaps", "1abc").is_empty());
        assert!(!name_problems("", "namespaces", "a.b").is_empty());
        assert!(name_problems("rbac.authorization.k8s.io", "clusterroles", "system:admin").is_empty());
        assert!(qualified_name_problem("app.kubernetes.io/name").is_none());
        assert!(qualified_name_problem("-bad").is_some());
        assert!(qualified_name_problem("/x").is_some());
    }

    #[test]
    fn generated_suffix_uses_the_alphabet() {
        let s = name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}

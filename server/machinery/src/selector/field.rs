//! Field selectors (`metadata.name=x,status.phase!=Running`): Kubernetes' syntax and escaping,
//! and the per-kind fields it lets clients select on, with the same error messages.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// A selectable field: where its value is in the object JSON (the first non-empty of
/// `paths`) and what a missing value reads as (Go's zero value of the field).
#[derive(Debug, PartialEq)]
struct Field {
    name: &'static str,
    paths: &'static [&'static [&'static str]],
    missing: &'static str,
}

const fn field(name: &'static str, paths: &'static [&'static [&'static str]], missing: &'static str) -> Field {
    Field { name, paths, missing }
}

const NAME: Field = field("metadata.name", &[&["metadata", "name"]], "");
const NAMESPACE: Field = field("metadata.namespace", &[&["metadata", "namespace"]], "");

/// How a kind words a field it does not support.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// Kinds with their own conversion function in `core/v1`.
    Core,
    /// `batch/v1` jobs.
    Job,
    /// Every kind without one (`DefaultMetaV1FieldSelectorConversion`).
    Default,
}

/// The fields of each kind with selectable fields beyond name and namespace, as Kubernetes
/// registers them (`AddFieldLabelConversionFunc` and the registries' `ToSelectableFields`).
fn kind_fields(group: &str, resource: &str) -> Option<(Refusal, &'static [Field])> {
    static PODS: &[Field] = &[
        NAME,
        NAMESPACE,
        field("spec.nodeName", &[&["spec", "nodeName"]], ""),
        field("spec.restartPolicy", &[&["spec", "restartPolicy"]], ""),
        field("spec.schedulerName", &[&["spec", "schedulerName"]], ""),
        field("spec.serviceAccountName", &[&["spec", "serviceAccountName"]], ""),
        field("spec.hostNetwork", &[&["spec", "hostNetwork"]], "false"),
        field("status.phase", &[&["status", "phase"]], ""),
        field("status.podIP", &[&["status", "podIPs", "0", "ip"], &["status", "podIP"]], ""),
        // Accepted but never set by Kubernetes, so only the empty value matches.
        field("status.podIPs", &[], ""),
        field("status.nominatedNodeName", &[&["status", "nominatedNodeName"]], ""),
        // Old clients' name for spec.nodeName.
        field("spec.host", &[&["spec", "nodeName"]], ""),
    ];
    static NODES: &[Field] = &[NAME, field("spec.unschedulable", &[&["spec", "unschedulable"]], "false")];
    static REPLICATION_CONTROLLERS: &[Field] =
        &[NAME, NAMESPACE, field("status.replicas", &[&["status", "replicas"]], "0")];
    static EVENTS: &[Field] = &[
        field("involvedObject.kind", &[&["involvedObject", "kind"]], ""),
        field("involvedObject.namespace", &[&["involvedObject", "namespace"]], ""),
        field("involvedObject.name", &[&["involvedObject", "name"]], ""),
        field("involvedObject.uid", &[&["involvedObject", "uid"]], ""),
        field("involvedObject.apiVersion", &[&["involvedObject", "apiVersion"]], ""),
        field("involvedObject.resourceVersion", &[&["involvedObject", "resourceVersion"]], ""),
        field("involvedObject.fieldPath", &[&["involvedObject", "fieldPath"]], ""),
        field("reason", &[&["reason"]], ""),
        field("reportingComponent", &[&["reportingComponent"]], ""),
        field("source", &[&["source", "component"], &["reportingComponent"]], ""),
        field("type", &[&["type"]], ""),
        NAMESPACE,
        NAME,
    ];
    // `events.k8s.io/v1` names them as it names its fields; they select the stored `v1` Event.
    static EVENTS_V1: &[Field] = &[
        field("regarding.kind", &[&["involvedObject", "kind"]], ""),
        field("regarding.namespace", &[&["involvedObject", "namespace"]], ""),
        field("regarding.name", &[&["involvedObject", "name"]], ""),
        field("regarding.uid", &[&["involvedObject", "uid"]], ""),
        field("regarding.apiVersion", &[&["involvedObject", "apiVersion"]], ""),
        field("regarding.resourceVersion", &[&["involvedObject", "resourceVersion"]], ""),
        field("regarding.fieldPath", &[&["involvedObject", "fieldPath"]], ""),
        field("reason", &[&["reason"]], ""),
        field("reportingController", &[&["reportingComponent"]], ""),
        field("type", &[&["type"]], ""),
        NAMESPACE,
        NAME,
    ];
    static NAMESPACES: &[Field] = &[field("status.phase", &[&["status", "phase"]], ""), NAME];
    static SECRETS: &[Field] = &[field("type", &[&["type"]], ""), NAMESPACE, NAME];
    static SERVICES: &[Field] = &[
        NAMESPACE,
        NAME,
        field("spec.clusterIP", &[&["spec", "clusterIP"]], ""),
        field("spec.type", &[&["spec", "type"]], ""),
    ];
    static JOBS: &[Field] = &[NAME, NAMESPACE, field("status.successful", &[&["status", "succeeded"]], "0")];
    static CSRS: &[Field] = &[NAME, field("spec.signerName", &[&["spec", "signerName"]], "")];
    Some(match (group, resource) {
        ("", "pods") => (Refusal::Core, PODS),
        ("", "nodes") => (Refusal::Core, NODES),
        ("", "replicationcontrollers") => (Refusal::Core, REPLICATION_CONTROLLERS),
        ("", "events") => (Refusal::Core, EVENTS),
        ("events.k8s.io", "events") => (Refusal::Core, EVENTS_V1),
        ("", "namespaces") => (Refusal::Core, NAMESPACES),
        ("", "secrets") => (Refusal::Core, SECRETS),
        ("", "services") => (Refusal::Core, SERVICES),
        ("batch", "jobs") => (Refusal::Job, JOBS),
        ("certificates.k8s.io", "certificatesigningrequests") => (Refusal::Core, CSRS),
        _ => return None,
    })
}

/// The fields of a resource, and how it refuses others.
fn fields_of(group: &str, resource: &str) -> (Refusal, &'static [Field]) {
    static DEFAULT: &[Field] = &[NAME, NAMESPACE];
    kind_fields(group, resource).unwrap_or((Refusal::Default, DEFAULT))
}

fn refuse(refusal: Refusal, name: &str, custom: &[String]) -> ApiError {
    ApiError::BadRequest(match refusal {
        Refusal::Core => format!("field label not supported: {name}"),
        Refusal::Job => format!("field label {name:?} not supported for batchv1.Job"),
        Refusal::Default => {
            let known: Vec<String> = ["metadata.name", "metadata.namespace"].iter().map(|s| s.to_string()).chain(custom.iter().cloned()).map(|f| format!("{f:?}")).collect();
            format!("{name:?} is not a known field selector: only {}", known.join(", "))
        }
    })
}

/// What a term selects on: a kind's field, or a custom resource's selectable field (its path).
#[derive(Debug, PartialEq)]
enum Selected {
    Known(&'static Field),
    Custom(Vec<String>),
}

/// One `field=value` or `field!=value` term.
#[derive(Debug, PartialEq)]
struct Term {
    field: Selected,
    value: String,
    negated: bool,
}

/// A parsed field selector: the AND of its terms. Empty selects everything.
#[derive(Debug, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<Term>,
}

/// Splits on commas that are not escaped with a backslash.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator: `!=`, `==` or `=`.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .iter()
            .find(|op| rest.starts_with(**op))
            .map(|op| (&term[..i], *op == "!=", &rest[op.len()..]))
    })
}

/// Resolves `\\`, `\,` and `\=`; other escapes and bare `,` or `=` are errors.
fn unescape(value: &str) -> ApiResult<String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        match c {
            '\\' | ',' | '=' if escaped => {
                out.push(c);
                escaped = false;
            }
            _ if escaped => {
                return Err(ApiError::bad_request(format!("invalid field selector: invalid escape sequence: \\{c}")));
            }
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(ApiError::bad_request(format!("invalid field selector: unescaped character in value: {c}")))
            }
            _ => out.push(c),
        }
    }
    if escaped {
        return Err(ApiError::bad_request("invalid field selector: invalid escape sequence: \\"));
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses a selector for `resource` of `group` (with a custom resource version's
    /// `selectableFields`, `spec.color`); a syntax error or a field the kind does not support is
    /// a 400 with Kubernetes' message.
    pub fn parse(group: &str, resource: &str, custom: &[String], s: &str) -> ApiResult<FieldSelector> {
        let (refusal, fields) = fields_of(group, resource);
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let (name, negated, raw) = split_term(part)
                .ok_or_else(|| ApiError::bad_request(format!("invalid selector: '{s}'; can't understand '{part}'")))?;
            let value = unescape(raw)?;
            terms.push((name, negated, value));
        }
        let terms = terms
            .into_iter()
            .map(|(name, negated, value)| {
                let field = match fields.iter().find(|f| f.name == name) {
                    Some(f) => Selected::Known(f),
                    None if custom.iter().any(|c| c == name) => Selected::Custom(name.split('.').map(str::to_string).collect()),
                    None => return Err(refuse(refusal, name, custom)),
                };
                Ok(Term { field, value, negated })
            })
            .collect::<ApiResult<_>>()?;
        Ok(FieldSelector { terms })
    }

    /// Whether this selector selects every object.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value a term of the selector requires at the dotted `path` (`metadata.name`,
    /// `spec.nodeName`, under whichever name the term gave it), when one does.
    pub fn required(&self, path: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negated && matches!(&t.field, Selected::Known(f) if f.paths.len() == 1 && f.paths[0].join(".") == path))
            .map(|t| t.value.as_str())
    }

    /// Whether `obj` is selected. Values compare as strings; booleans and numbers as Go
    /// formats them, missing fields as the field's zero value.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| (field_value(&t.field, obj) == t.value) != t.negated)
    }
}

/// The scalar at `path` as a selector compares it: strings as they are, booleans and numbers as
/// Go formats them.
fn scalar_at<S: AsRef<str>>(obj: &Value, path: &[S]) -> Option<String> {
    let found = path.iter().try_fold(obj, |v, seg| match v {
        Value::Array(items) => seg.as_ref().parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => v.get(seg.as_ref()),
    })?;
    match found {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn field_value(field: &Selected, obj: &Value) -> String {
    match field {
        Selected::Known(f) => f.paths.iter().filter_map(|p| scalar_at(obj, p)).find(|s| !s.is_empty()).unwrap_or_else(|| f.missing.to_string()),
        Selected::Custom(path) => scalar_at(obj, path).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p1", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}]}
        })
    }

    fn matches(resource: &str, s: &str, obj: &Value) -> bool {
        FieldSelector::parse("", resource, &[], s).unwrap_or_else(|e| panic!("{s}: {e}")).matches(obj)
    }

    #[test]
    fn pod_fields() {
        let p = pod();
        for s in [
            "",
            "metadata.name=p1",
            "metadata.name==p1",
            "metadata.namespace!=other",
            "spec.nodeName=n1,status.phase=Running",
            "spec.hostNetwork=false",
            "status.podIP=10.0.0.1",
            "status.nominatedNodeName=",
            "spec.host=n1",
            "status.podIPs=",
            "spec.schedulerName!=x",
        ] {
            assert!(matches("pods", s, &p), "{s}");
        }
        for s in ["metadata.name=p2", "status.phase!=Running", "spec.hostNetwork=true", "spec.nodeName="] {
            assert!(!matches("pods", s, &p), "{s}");
        }
        assert!(FieldSelector::parse("", "pods", &[], "").unwrap().is_empty());
    }

    #[test]
    fn a_required_value_is_found_under_either_name_of_its_field() {
        let parse = |s: &str| FieldSelector::parse("", "pods", &[], s).unwrap();
        assert_eq!(parse("spec.nodeName=n1,status.phase!=Failed").required("spec.nodeName"), Some("n1"));
        assert_eq!(parse("spec.host=n2").required("spec.nodeName"), Some("n2"));
        assert_eq!(parse("spec.nodeName=").required("spec.nodeName"), Some(""));
        assert_eq!(parse("spec.nodeName!=n1").required("spec.nodeName"), None);
        assert_eq!(parse("metadata.name=p").required("metadata.name"), Some("p"));
        assert_eq!(parse("status.phase=Running").required("spec.nodeName"), None);
    }

    #[test]
    fn typed_values() {
        let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert!(matches("nodes", "spec.unschedulable=true", &node));
        assert!(matches("nodes", "spec.unschedulable=false", &json!({"metadata": {"name": "n"}})));
        let rc = json!({"status": {"replicas": 3}});
        assert!(matches("replicationcontrollers", "status.replicas=3", &rc));
        assert!(matches("replicationcontrollers", "status.replicas=0", &json!({})));
        let job = FieldSelector::parse("batch", "jobs", &[], "status.successful=2").unwrap();
        assert!(job.matches(&json!({"status": {"succeeded": 2}})));
        let ev =
            json!({"involvedObject": {"kind": "Pod", "name": "p"}, "reportingComponent": "kubelet", "type": "Normal"});
        assert!(matches("events", "involvedObject.kind=Pod,involvedObject.name=p,source=kubelet,type=Normal", &ev));
    }

    #[test]
    fn escaping() {
        let obj = json!({"metadata": {"name": "a,b=c\\"}});
        assert!(matches("configmaps", r"metadata.name=a\,b\=c\\", &obj));
        let err = |s| FieldSelector::parse("", "configmaps", &[], s).unwrap_err().to_string();
        assert_eq!(err(r"metadata.name=a\x"), r"invalid field selector: invalid escape sequence: \x");
        assert_eq!(err(r"metadata.name=a\"), r"invalid field selector: invalid escape sequence: \");
        assert_eq!(err("metadata.name=a=b"), "invalid field selector: unescaped character in value: =");
    }

    #[test]
    fn errors_match_kubernetes() {
        let err = |g, r, s| FieldSelector::parse(g, r, &[], s).unwrap_err();
        assert_eq!(err("", "pods", "spec.foo=x").to_string(), "field label not supported: spec.foo");
        assert_eq!(err("", "pods", "spec.foo=x").code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(
            err("networking.k8s.io", "ingresses", "foo.bar=baz").to_string(),
            "\"foo.bar\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            err("batch", "jobs", "spec.x=1").to_string(),
            "field label \"spec.x\" not supported for batchv1.Job"
        );
        assert_eq!(
            err("", "nodes", "metadata.namespace=x").to_string(),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(err("", "pods", "foo").to_string(), "invalid selector: 'foo'; can't understand 'foo'");
        // apps/v1 registers no extra fields.
        assert!(FieldSelector::parse("apps", "replicasets", &[], "status.replicas=1").is_err());
        assert!(FieldSelector::parse("apps", "deployments", &[], "metadata.namespace=x,metadata.name=y").is_ok());
    }
}

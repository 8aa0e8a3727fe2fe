//! The default policy: Kubernetes 1.36's roles and bindings (data in `bootstrap-policy.yaml`,
//! recorded at the default gates; the gates in force add or take out parts of it, see `gated`),
//! created on an empty cluster and reconciled at every start as Kubernetes does (the server's
//! `rbac/bootstrap-roles` post-start hook writes what this decides): missing rules,
//! aggregation selectors, subjects, labels and annotations are added; a binding whose role
//! reference changed is recreated; objects annotated `autoupdate: "false"` are left alone.

use std::sync::OnceLock;

use machinery::features;
use serde::Deserialize;
use serde_json::{json, Value};

use super::gated;
use super::rules::{covers, Rule};

pub(super) const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The API group of the RBAC kinds.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// Every object of the default policy for the versions and gates in force (installed at start,
/// before any use), in the file's order (roles before bindings).
pub fn objects() -> &'static [Value] {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(|| gated::apply(recorded(), features::current()))
}

/// The policy as `bootstrap-policy.yaml` records it: kube-apiserver's at its default gates.
pub(super) fn recorded() -> Vec<Value> {
    serde_yaml::Deserializer::from_str(include_str!("bootstrap-policy.yaml"))
        .map(|doc| Value::deserialize(doc).expect("the default policy is valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The rules of one default ClusterRole (empty when the policy has no such role).
pub fn cluster_role_rules(name: &str) -> Vec<Rule> {
    objects()
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
        .and_then(|o| serde_json::from_value(o["rules"].clone()).ok())
        .unwrap_or_default()
}

/// What reconciling one existing object against its default calls for.
#[derive(Debug, PartialEq)]
pub enum Reconciled {
    Unchanged,
    Update(Value),
    /// A binding whose role reference differs: delete it and create the default.
    Recreate,
}

fn protected(existing: &Value) -> bool {
    existing["metadata"]["annotations"][AUTOUPDATE] == "false"
}

/// `expected`'s entries of a string map added to `existing`'s (existing values win).
fn merge_map(existing: &Value, expected: &Value) -> Value {
    let mut out = existing.as_object().cloned().unwrap_or_default();
    for (k, v) in expected.as_object().into_iter().flatten() {
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(out)
}

fn merged_metadata(existing: &Value, expected: &Value) -> Value {
    let mut meta = existing["metadata"].clone();
    for field in ["labels", "annotations"] {
        let merged = merge_map(&existing["metadata"][field], &expected["metadata"][field]);
        if merged.as_object().is_some_and(|m| !m.is_empty()) {
            meta[field] = merged;
        }
    }
    meta
}

fn list(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// A Role or ClusterRole: the rules it lacks (broken down, as Kubernetes appends them) and the
/// aggregation selectors it lacks are added.
pub fn reconcile_role(existing: &Value, expected: &Value) -> Reconciled {
    if protected(existing) {
        return Reconciled::Unchanged;
    }
    let mut out = existing.clone();
    out["metadata"] = merged_metadata(existing, expected);
    let have: Vec<Rule> = serde_json::from_value(existing["rules"].clone()).unwrap_or_default();
    let want: Vec<Rule> = serde_json::from_value(expected["rules"].clone()).unwrap_or_default();
    if let Err(missing) = covers(&have, &want) {
        let mut rules = list(&existing["rules"]);
        rules.extend(missing.iter().map(|r| json!(r)));
        out["rules"] = Value::Array(rules);
    }
    let want_selectors = list(&expected["aggregationRule"]["clusterRoleSelectors"]);
    if !want_selectors.is_empty() {
        let mut selectors = list(&existing["aggregationRule"]["clusterRoleSelectors"]);
        for s in want_selectors {
            if !selectors.contains(&s) {
                selectors.push(s);
            }
        }
        out["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
    }
    if out == *existing {
        Reconciled::Unchanged
    } else {
        Reconciled::Update(out)
    }
}

/// A RoleBinding or ClusterRoleBinding: missing subjects are added; a different role reference
/// means the binding is recreated.
pub fn reconcile_binding(existing: &Value, expected: &Value) -> Reconciled {
    if protected(existing) {
        return Reconciled::Unchanged;
    }
    if existing["roleRef"] != expected["roleRef"] {
        return Reconciled::Recreate;
    }
    let mut out = existing.clone();
    out["metadata"] = merged_metadata(existing, expected);
    let mut subjects = list(&existing["subjects"]);
    for s in list(&expected["subjects"]) {
        if !subjects.contains(&s) {
            subjects.push(s);
        }
    }
    if !subjects.is_empty() {
        out["subjects"] = Value::Array(subjects);
    }
    if out == *existing {
        Reconciled::Unchanged
    } else {
        Reconciled::Update(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_gain_missing_rules_and_keep_their_own() {
        let expected = json!({"metadata": {"name": "r", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]});
        let existing = json!({"metadata": {"name": "r", "labels": {"team": "a"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, {"verbs": ["delete"], "apiGroups": [""], "resources": ["secrets"]}]});
        let Reconciled::Update(out) = reconcile_role(&existing, &expected) else { panic!("expected an update") };
        assert_eq!(out["metadata"]["labels"], json!({"team": "a", "kubernetes.io/bootstrapping": "rbac-defaults"}));
        assert_eq!(out["rules"].as_array().unwrap().len(), 3);
        assert_eq!(out["rules"][2], json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}));
        assert_eq!(reconcile_role(&out, &expected), Reconciled::Unchanged);
        let mut kept = existing.clone();
        kept["metadata"]["annotations"] = json!({AUTOUPDATE: "false"});
        assert_eq!(reconcile_role(&kept, &expected), Reconciled::Unchanged);
    }

    #[test]
    fn bindings_gain_subjects_or_are_recreated() {
        let g = |n: &str| json!({"kind": "Group", "apiGroup": GROUP, "name": n});
        let expected = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "x"}, "subjects": [g("a")]});
        let existing = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "x"}, "subjects": [g("b")]});
        let Reconciled::Update(out) = reconcile_binding(&existing, &expected) else { panic!("expected an update") };
        assert_eq!(out["subjects"], json!([g("b"), g("a")]));
        let moved = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "y"}});
        assert_eq!(reconcile_binding(&moved, &expected), Reconciled::Recreate);
    }
}

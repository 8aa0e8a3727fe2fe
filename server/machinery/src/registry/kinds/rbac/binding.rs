//! RoleBindings and ClusterRoleBindings: role reference and subject validation, and the role
//! reference fixed at creation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_subdomain, go_struct, set, unsupported, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Users and groups are of the RBAC API group when their subject names none.
pub fn defaults(obj: &mut Value) {
    for s in obj.get_mut("subjects").and_then(Value::as_array_mut).into_iter().flatten() {
        if matches!(s["kind"].as_str(), Some("User" | "Group")) {
            set(s, "apiGroup", json!(RBAC_GROUP));
        }
    }
}

/// RoleBindings and ClusterRoleBindings: a role reference of the RBAC group (a ClusterRoleBinding
/// only to a ClusterRole) and well-formed subjects.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let cluster = obj["kind"] == "ClusterRoleBinding";
    let mut out = Vec::new();
    let str_at = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let role_ref = &obj["roleRef"];
    let group = str_at(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        out.push(unsupported("roleRef.apiGroup".into(), &group, &[RBAC_GROUP]));
    }
    let kind = str_at(role_ref, "kind");
    let kinds: &[&str] = if cluster { &["ClusterRole"] } else { &["Role", "ClusterRole"] };
    if !kinds.contains(&kind.as_str()) {
        out.push(unsupported("roleRef.kind".into(), &kind, kinds));
    }
    let name = str_at(role_ref, "name");
    if name.is_empty() {
        out.push(Cause::required("roleRef.name"));
    } else if name.contains('/') || name.contains('%') || name == "." || name == ".." {
        out.push(Cause::invalid("roleRef.name", &name, "may not contain '/' or '%', and may not be '.' or '..'"));
    }
    for (i, s) in obj["subjects"].as_array().into_iter().flatten().enumerate() {
        let at = |f: &str| format!("subjects[{i}].{f}");
        if str_at(s, "name").is_empty() {
            out.push(Cause::required(at("name")));
        }
        let group = str_at(s, "apiGroup");
        match str_at(s, "kind").as_str() {
            "ServiceAccount" => {
                if !group.is_empty() {
                    out.push(unsupported(at("apiGroup"), &group, &[""]));
                }
                dns_subdomain(&s["name"], &at("name"), &mut out);
                if cluster && str_at(s, "namespace").is_empty() {
                    out.push(Cause::required(at("namespace")));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    out.push(unsupported(at("apiGroup"), &group, &[RBAC_GROUP]));
                }
            }
            other => out.push(unsupported(at("kind"), other, &["ServiceAccount", "User", "Group"])),
        }
    }
    out
}

/// Bindings: the role they refer to is fixed at creation (delete and recreate to change it).
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let (was, now) = (&old["roleRef"], &new["roleRef"]);
    if was == now {
        return Vec::new();
    }
    let shown = go_struct(&[("APIGroup", now["apiGroup"].to_string()), ("Kind", now["kind"].to_string()), ("Name", now["name"].to_string())]);
    vec![Cause::new("FieldValueInvalid", "roleRef", format!("Invalid value: {shown}: cannot change roleRef"))]
}

pub const COLUMNS: &[Column] = &[col("Role", "string", 0), AGE, col("Users", "string", 1), col("Groups", "string", 1), col("ServiceAccounts", "string", 1)];

/// The role as `Kind/name`, then the subjects by kind (service accounts as `namespace/name`).
pub fn cells(obj: &Value) -> Vec<Value> {
    let subjects = obj["subjects"].as_array().cloned().unwrap_or_default();
    let of = |kind: &str| {
        let names: Vec<String> = subjects
            .iter()
            .filter(|s| s["kind"] == kind)
            .map(|s| match kind {
                "ServiceAccount" => format!("{}/{}", s["namespace"].as_str().unwrap_or_default(), s["name"].as_str().unwrap_or_default()),
                _ => s["name"].as_str().unwrap_or_default().to_string(),
            })
            .collect();
        json!(names.join(", "))
    };
    let role = &obj["roleRef"];
    vec![
        json!(format!("{}/{}", role["kind"].as_str().unwrap_or_default(), role["name"].as_str().unwrap_or_default())),
        age(obj),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_and_subjects() {
        let b = json!({"kind": "ClusterRoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "User", "name": "u"}, {"kind": "Robot", "name": "r"}]});
        let causes = validate(&b);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["roleRef.kind", "subjects[0].namespace", "subjects[1].apiGroup", "subjects[2].kind"]);
        assert_eq!(causes[0].message, "Unsupported value: \"Role\": supported values: \"ClusterRole\"");
    }

    #[test]
    fn a_binding_without_subjects_keeps_none() {
        let mut b = json!({"kind": "ClusterRoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
        defaults(&mut b);
        assert!(b.get("subjects").is_none(), "{b}");
        let mut b = json!({"subjects": [{"kind": "User", "name": "u"}]});
        defaults(&mut b);
        assert_eq!(b["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    }
}

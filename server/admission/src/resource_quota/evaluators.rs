//! The quota evaluator of each resource, as Kubernetes registers them: pods, Services and
//! PersistentVolumeClaims have their own (usage, scopes, the writes that change usage); every
//! other resource is counted as `count/<resource>.<group>` when created, with the old names
//! (`configmaps`, `secrets`, `replicationcontrollers`, `resourcequotas`) for four core ones.
//! Admission and the quota controller both count through this.

use serde_json::Value;

use super::{claims, pods, scopes, services};
use crate::resource_list::ResourceList;
use crate::Operation;
use machinery::expr::amount::Amount;

/// The resources quota never counts (not stored, or too many to count: events).
const IGNORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// The core resources also counted under their old names.
const ALIASES: &[(&str, &str)] = &[
    ("configmaps", "configmaps"),
    ("resourcequotas", "resourcequotas"),
    ("replicationcontrollers", "replicationcontrollers"),
    ("secrets", "secrets"),
];

#[derive(Clone, Debug, PartialEq)]
pub enum Evaluator {
    Pods,
    Services,
    Claims,
    /// An object count, under these names.
    Count(Vec<String>),
}

/// `count/<resource>` for the core group, `count/<resource>.<group>` otherwise.
fn count_name(group: &str, resource: &str) -> String {
    match group {
        "" => format!("count/{resource}"),
        _ => format!("count/{resource}.{group}"),
    }
}

impl Evaluator {
    /// The evaluator of a resource (none for those quota ignores).
    pub fn of(group: &str, resource: &str) -> Option<Evaluator> {
        if IGNORED.contains(&(group, resource)) {
            return None;
        }
        Some(match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::Claims,
            _ => {
                let alias = ALIASES.iter().find(|(r, _)| group.is_empty() && *r == resource).map(|(_, a)| a.to_string());
                Evaluator::Count(std::iter::once(count_name(group, resource)).chain(alias).collect())
            }
        })
    }

    /// Whether a write may change the usage: creations; updates only where usage can move
    /// (a pod's deadline or resize, a Service's type or ports, a claim's request, allocation or
    /// attribute classes).
    pub fn handles(&self, operation: Operation, subresource: Option<&str>, object: &Value, old: Option<&Value>) -> bool {
        let (create, update) = (operation == Operation::Create, operation == Operation::Update);
        match (self, subresource) {
            (Evaluator::Pods, None) => create || (update && old.is_some_and(|o| scopes::terminating(o) != scopes::terminating(object))),
            (Evaluator::Pods, Some("resize")) => update,
            (Evaluator::Services, None) | (Evaluator::Claims, None) => create || update,
            (Evaluator::Claims, Some("status")) => update && old.is_some_and(|o| claims::status_moves_usage(object, o)),
            (Evaluator::Count(_), None) => create,
            _ => false,
        }
    }

    /// The names among `names` this evaluator counts.
    pub fn matching<'a>(&self, names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        let names = names.into_iter();
        match self {
            Evaluator::Pods => names.filter(|n| pods::RESOURCES.contains(&n.as_str()) || pods::PREFIXES.iter().any(|p| n.starts_with(p)) || pods::extended_request(n)).cloned().collect(),
            Evaluator::Services => names.filter(|n| services::RESOURCES.contains(&n.as_str())).cloned().collect(),
            Evaluator::Claims => names.filter(|n| claims::RESOURCES.contains(&n.as_str()) || claims::by_class(n)).cloned().collect(),
            Evaluator::Count(counted) => names.filter(|n| counted.contains(n)).cloned().collect(),
        }
    }

    /// Whether the object meets one scope requirement.
    pub fn meets(&self, selector: &Value, object: &Value) -> bool {
        match self {
            Evaluator::Pods => scopes::pod_matches(selector, object),
            Evaluator::Claims => scopes::claim_matches(selector, object),
            _ => false,
        }
    }

    /// Whether the quota counts the object: it limits something the evaluator counts (by
    /// `status.hard`) and the object meets every scope requirement.
    pub fn matches(&self, quota: &Value, object: &Value) -> bool {
        let hard = quota["status"]["hard"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        !self.matching(&hard).is_empty() && scopes::selectors(quota).iter().all(|s| self.meets(s, object))
    }

    /// What the object uses.
    pub fn usage(&self, object: &Value) -> ResourceList {
        match self {
            Evaluator::Pods => pods::usage(object),
            Evaluator::Services => services::usage(object),
            Evaluator::Claims => claims::usage(object),
            Evaluator::Count(names) => names.iter().map(|n| (n.clone(), Amount::count(1))).collect(),
        }
    }

    /// Why the object cannot be charged to a quota limiting `required` (pods only).
    pub fn constraints(&self, required: &[String], object: &Value) -> Result<(), String> {
        match self {
            Evaluator::Pods => pods::constraints(required, object),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluators_by_resource() {
        assert_eq!(Evaluator::of("", "configmaps"), Some(Evaluator::Count(vec!["count/configmaps".into(), "configmaps".into()])));
        assert_eq!(Evaluator::of("apps", "deployments"), Some(Evaluator::Count(vec!["count/deployments.apps".into()])));
        assert_eq!(Evaluator::of("", "events"), None);
        let hard = ["count/deployments.apps".to_string(), "pods".to_string()];
        assert_eq!(Evaluator::of("apps", "deployments").unwrap().matching(&hard), ["count/deployments.apps"]);
        let quota = json!({"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "1", "configmaps": "1"}}});
        assert!(!Evaluator::of("", "configmaps").unwrap().matches(&quota, &json!({})));
        assert!(Evaluator::Pods.matches(&quota, &json!({"spec": {"containers": [{"name": "c"}]}})));
        let old = json!({"spec": {}});
        let deadline = json!({"spec": {"activeDeadlineSeconds": 5}});
        assert!(Evaluator::Pods.handles(Operation::Update, None, &deadline, Some(&old)));
        assert!(!Evaluator::Pods.handles(Operation::Update, None, &old, Some(&old)));
        assert!(!Evaluator::of("", "secrets").unwrap().handles(Operation::Update, None, &old, Some(&old)));
    }
}

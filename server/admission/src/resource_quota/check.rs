//! One write checked against its namespace's quotas, as Kubernetes' quota admission checks it:
//! the quotas that count the object (by `status.hard` and their scopes) must know its usage
//! (`status.used` covering what they limit) and accept its containers; its usage, or for an
//! update what it adds to the old object's, must fit each quota's `hard`; the answer is each
//! such quota's new `status.used`, or the refusal in Kubernetes' words (`exceeded quota: q,
//! requested: pods=1, used: pods=2, limited: pods=2`). What the configuration limits
//! ([`super::limited`]) must be covered by some quota.

use std::sync::Arc;

use serde_json::Value;

use super::evaluators::Evaluator;
use super::limited::{self, Limited};
use crate::resource_list::{add, equal, exceeded, mask, pretty, read, remove_zeros, subtract_non_negative, ResourceList};
use crate::Operation;

/// A quota as stored, with the revision a conditional write of its status names.
#[derive(Clone, Debug)]
pub struct Quota {
    pub rev: u64,
    pub object: Arc<Value>,
}

impl Quota {
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn hard(&self) -> ResourceList {
        read(&self.object["status"]["hard"])
    }

    fn used(&self) -> ResourceList {
        read(&self.object["status"]["used"])
    }
}

/// Why a write is refused: a 403 in the quota's words, or (the scopes no quota covers) the
/// plain error kube-apiserver answers 500 with.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    Forbidden(String),
    Unscoped(String),
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal::Forbidden(message)
    }
}

/// The write, as the check needs it.
pub struct Write<'a> {
    pub evaluator: &'a Evaluator,
    /// The object's group and resource.
    pub resource: (&'a str, &'a str),
    /// The configuration's `limitedResources`.
    pub limited: &'a [Limited],
    pub operation: Operation,
    pub subresource: Option<&'a str>,
    pub object: &'a Value,
    pub old: Option<&'a Value>,
}

/// The new `status.used` of each quota (by index) the write changes, or why it is refused.
pub fn check(quotas: &[Quota], w: &Write<'_>) -> Result<Vec<(usize, ResourceList)>, Refusal> {
    let evaluator = w.evaluator;
    let limited_scopes = limited::scopes(w.limited, evaluator, w.object);
    let limited_names = match w.limited.is_empty() {
        true => Default::default(),
        false => limited::names(w.limited, w.resource.0, w.resource.1, &evaluator.usage(w.object)),
    };
    let mut counting = Vec::new();
    let (mut covered_names, mut covered_scopes) = (std::collections::BTreeSet::new(), Vec::new());
    for (i, quota) in quotas.iter().enumerate() {
        covered_scopes.extend(super::scopes::selectors(&quota.object).into_iter().filter(|s| evaluator.meets(s, w.object)));
        if !evaluator.matches(&quota.object, w.object) {
            continue;
        }
        let hard = quota.hard();
        let restricted = evaluator.matching(hard.keys());
        evaluator.constraints(&restricted, w.object).map_err(|e| format!("failed quota: {}: {e}", quota.name()))?;
        let used = quota.used();
        if restricted.iter().any(|r| !used.contains_key(r)) {
            return Err(format!("status unknown for quota: {}, resources: {}", quota.name(), restricted.join(",")).into());
        }
        covered_names.extend(restricted);
        counting.push(i);
    }
    let usage = evaluator.usage(w.object);
    let negative: Vec<&str> = usage.iter().filter(|(_, v)| v.sign() < 0).map(|(k, _)| k.as_str()).collect();
    if !negative.is_empty() {
        return Err(format!("quota usage is negative for resource(s): {}", negative.join(",")).into());
    }
    let mut deltas: Vec<(usize, ResourceList)> = counting.iter().map(|i| (*i, usage.clone())).collect();
    // What the write adds, for the limited resources when no quota counts it.
    let mut added = usage.clone();
    if w.operation == Operation::Update {
        let old = w.old.ok_or_else(|| "unable to get previous usage since prior version of object was not found".to_string())?;
        let delta = subtract_non_negative(&usage, &evaluator.usage(old));
        added = delta.clone();
        // A quota that counted the old object too is charged only what the update adds.
        for (i, d) in deltas.iter_mut() {
            if evaluator.matches(&quotas[*i].object, old) {
                *d = delta.clone();
            }
        }
    }
    let deltas: Vec<(usize, ResourceList)> = deltas.into_iter().map(|(i, d)| (i, remove_zeros(d))).filter(|(_, d)| !d.is_empty()).collect();
    let changes_nothing = match counting.is_empty() {
        true => remove_zeros(added).is_empty(),
        false => deltas.is_empty(),
    };
    if changes_nothing {
        return Ok(Vec::new());
    }
    let uncovered: Vec<&str> = limited_names.iter().filter(|n| !covered_names.contains(*n)).map(String::as_str).collect();
    if !uncovered.is_empty() {
        return Err(format!("insufficient quota to consume: {}", uncovered.join(",")).into());
    }
    if let Some(scopes) = limited::uncovered(&limited_scopes, &covered_scopes) {
        return Err(Refusal::Unscoped(format!("insufficient quota to match these scopes: {scopes}")));
    }
    let mut changes = Vec::new();
    for (i, delta) in deltas {
        let quota = &quotas[i];
        let (hard, used) = (quota.hard(), quota.used());
        let requested = mask(&delta, hard.keys());
        let new_used = add(&used, &requested);
        if w.subresource != Some("status") {
            let over = exceeded(&mask(&new_used, requested.keys()), &hard);
            if !over.is_empty() {
                return Err(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    quota.name(),
                    pretty(&mask(&requested, &over)),
                    pretty(&mask(&used, &over)),
                    pretty(&mask(&hard, &over)),
                )
                .into());
            }
        }
        if !equal(&new_used, &used) {
            changes.push((i, new_used));
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(name: &str, spec: Value, hard: Value, used: Value) -> Quota {
        Quota { rev: 1, object: Arc::new(json!({"metadata": {"name": name}, "spec": spec, "status": {"hard": hard, "used": used}})) }
    }

    fn create<'a>(evaluator: &'a Evaluator, object: &'a Value) -> Write<'a> {
        Write { evaluator, resource: ("", "configmaps"), limited: &[], operation: Operation::Create, subresource: None, object, old: None }
    }

    fn refused(message: &str) -> Refusal {
        Refusal::Forbidden(message.to_string())
    }

    #[test]
    fn charges_what_fits_and_refuses_the_rest_in_kubernetes_words() {
        let configmaps = Evaluator::of("", "configmaps").unwrap();
        let cm = json!({"metadata": {"name": "c"}});
        let quotas = [quota("q", json!({}), json!({"configmaps": "3", "pods": "2"}), json!({"configmaps": "2", "pods": "0"}))];
        let changes = check(&quotas, &create(&configmaps, &cm)).unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(pretty(&changes[0].1), "configmaps=3,pods=0");
        let full = [quota("q", json!({}), json!({"configmaps": "3"}), json!({"configmaps": "3"}))];
        assert_eq!(check(&full, &create(&configmaps, &cm)).unwrap_err(), refused("exceeded quota: q, requested: configmaps=1, used: configmaps=3, limited: configmaps=3"));
        let unknown = [quota("q", json!({}), json!({"configmaps": "3"}), json!({}))];
        assert_eq!(check(&unknown, &create(&configmaps, &cm)).unwrap_err(), refused("status unknown for quota: q, resources: configmaps"));
        // A quota whose status knows nothing yet limits nothing.
        let fresh = [Quota { rev: 1, object: Arc::new(json!({"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "0"}}})) }];
        assert!(check(&fresh, &create(&configmaps, &cm)).unwrap().is_empty());
    }

    #[test]
    fn pods_by_scope_and_updates_by_what_they_add() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}});
        let quotas = [
            quota("best-effort", json!({"scopes": ["BestEffort"]}), json!({"pods": "1"}), json!({"pods": "1"})),
            quota("compute", json!({}), json!({"requests.cpu": "1", "limits.cpu": "2"}), json!({"requests.cpu": "700m", "limits.cpu": "0"})),
        ];
        assert_eq!(
            check(&quotas, &create(&Evaluator::Pods, &pod)).unwrap_err(),
            refused("failed quota: compute: must specify limits.cpu for: c")
        );
        let quotas = [quotas[0].clone(), quota("compute", json!({}), json!({"requests.cpu": "1"}), json!({"requests.cpu": "700m"}))];
        assert_eq!(
            check(&quotas, &create(&Evaluator::Pods, &pod)).unwrap_err(),
            refused("exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=700m, limited: requests.cpu=1")
        );
        let services = Evaluator::Services;
        let quotas = [quota("svc", json!({}), json!({"services": "2", "services.nodeports": "1"}), json!({"services": "2", "services.nodeports": "0"}))];
        let old = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
        let new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]}});
        let update = Write { evaluator: &services, resource: ("", "services"), limited: &[], operation: Operation::Update, subresource: None, object: &new, old: Some(&old) };
        assert_eq!(pretty(&check(&quotas, &update).unwrap()[0].1), "services=2,services.nodeports=1");
    }

    #[test]
    fn limited_resources_need_a_covering_quota() {
        let config = json!({"limitedResources": [
            {"resource": "pods", "matchContains": ["requests.cpu"]},
            {"resource": "pods", "matchScopes": [{"scopeName": "PriorityClass", "operator": "In", "values": ["cluster-services"]}]}]});
        let limited = limited::parse(Some(&config)).unwrap();
        let pod = |class: &str, cpu: &str| json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": class, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}});
        let write = |object| Write { evaluator: &Evaluator::Pods, resource: ("", "pods"), limited: &limited, operation: Operation::Create, subresource: None, object, old: None };
        let (cpu, critical) = (pod("", "1"), pod("cluster-services", "0"));
        assert_eq!(check(&[], &write(&cpu)).unwrap_err(), refused("insufficient quota to consume: requests.cpu"));
        let counts_pods = [quota("pods", json!({}), json!({"pods": "5"}), json!({"pods": "0"}))];
        assert_eq!(check(&counts_pods, &write(&cpu)).unwrap_err(), refused("insufficient quota to consume: requests.cpu"));
        let counts_cpu = [quota("cpu", json!({}), json!({"requests.cpu": "2"}), json!({"requests.cpu": "0"}))];
        assert_eq!(check(&counts_cpu, &write(&cpu)).unwrap().len(), 1);
        assert_eq!(
            check(&counts_pods, &write(&critical)).unwrap_err(),
            Refusal::Unscoped("insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]".into())
        );
        let scoped = [quota("critical", json!({"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["cluster-services"]}]}}), json!({"pods": "5"}), json!({"pods": "0"}))];
        assert_eq!(check(&scoped, &write(&critical)).unwrap().len(), 1);
        // A pod of another class is not limited.
        assert!(check(&[], &write(&pod("other", "0"))).unwrap().is_empty());
    }
}

//! A quota's usage counted from its namespace's objects, as kube-controller-manager's quota
//! controller counts it (quota.CalculateUsage): for each evaluator that counts something the
//! quota's `spec.hard` names, the usage of every object meeting the quota's scopes, starting
//! from zero, kept to the names the quota limits. The controller reads the objects; the
//! counting is the one admission charges by.

use serde_json::Value;

use super::evaluators::Evaluator;
use super::scopes::selectors;
use crate::resource_list::{add_into, mask, ResourceList};
use machinery::expr::amount::Amount;

/// The resources whose objects a quota limiting `hard` counts, with their evaluators.
pub fn counted(hard: &ResourceList) -> Vec<((String, String), Evaluator)> {
    let mut resources: Vec<(String, String)> =
        [("", "pods"), ("", "services"), ("", "persistentvolumeclaims"), ("", "configmaps"), ("", "secrets"), ("", "replicationcontrollers"), ("", "resourcequotas")]
            .iter()
            .map(|(g, r)| (g.to_string(), r.to_string()))
            .collect();
    // `count/<resource>.<group>` names any other resource (the group is what follows the first dot).
    for name in hard.keys() {
        let Some(counted) = name.strip_prefix("count/") else { continue };
        let (resource, group) = counted.split_once('.').unwrap_or((counted, ""));
        let key = (group.to_string(), resource.to_string());
        if !resources.contains(&key) {
            resources.push(key);
        }
    }
    resources
        .into_iter()
        .filter_map(|(group, resource)| {
            let evaluator = Evaluator::of(&group, &resource)?;
            (!evaluator.matching(hard.keys()).is_empty()).then_some(((group, resource), evaluator))
        })
        .collect()
}

/// The quota's usage of `hard` (its `spec.hard`), from `objects` (a resource's objects in the
/// quota's namespace, `None` for a resource not served, which is then not counted).
pub fn calculate(quota: &Value, hard: &ResourceList, objects: impl Fn(&str, &str) -> Option<Vec<Value>>) -> ResourceList {
    let requirements = selectors(quota);
    let mut used = ResourceList::new();
    let mut measured = Vec::new();
    for ((group, resource), evaluator) in counted(hard) {
        let Some(items) = objects(&group, &resource) else { continue };
        let names = evaluator.matching(hard.keys());
        for n in &names {
            used.insert(n.clone(), Amount::zero());
        }
        for item in items.iter().filter(|o| requirements.iter().all(|s| evaluator.meets(s, o))) {
            add_into(&mut used, &evaluator.usage(item));
        }
        measured.extend(names);
    }
    mask(&used, &measured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource_list::{pretty, read};
    use serde_json::json;

    #[test]
    fn counts_the_namespace_objects_the_quota_limits() {
        let quota = json!({"spec": {"hard": {"pods": "10", "requests.cpu": "4", "configmaps": "5", "count/deployments.apps": "2", "count/widgets.example.com": "1"}}});
        let hard = read(&quota["spec"]["hard"]);
        let pod = |cpu: &str, phase: &str| json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}, "status": {"phase": phase}});
        let used = calculate(&quota, &hard, |group, resource| match (group, resource) {
            ("", "pods") => Some(vec![pod("500m", "Running"), pod("1", "Running"), pod("2", "Succeeded")]),
            ("", "configmaps") => Some(vec![json!({}), json!({})]),
            ("apps", "deployments") => Some(vec![]),
            ("example.com", "widgets") => None,
            _ => Some(vec![]),
        });
        assert_eq!(pretty(&used), "configmaps=2,count/deployments.apps=0,pods=2,requests.cpu=1500m");
        let scoped = json!({"spec": {"scopes": ["BestEffort"], "hard": {"pods": "10"}}});
        let used = calculate(&scoped, &read(&scoped["spec"]["hard"]), |_, r| Some(if r == "pods" { vec![pod("1", "Running"), json!({"spec": {"containers": [{"name": "c"}]}})] } else { vec![] }));
        assert_eq!(pretty(&used), "pods=1");
    }
}

//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets the
//! rules of every ClusterRole its selectors match (in name order, without repeats), kept up to
//! date as labelled roles come, change or go. Runs on the Raft leader only, driven by its watch
//! of ClusterRoles.

use serde_json::{json, Value};

use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry;
use access::request::Verb;
use machinery::selector::label_selector_matches;

const PREFIX: &str = "/registry/rbac.authorization.k8s.io/clusterroles/";

/// The rules an aggregated role should have, given every ClusterRole (sorted by name).
pub fn aggregated_rules(role: &Value, all: &[Value]) -> Vec<Value> {
    let selectors = role["aggregationRule"]["clusterRoleSelectors"].as_array().cloned().unwrap_or_default();
    let name = &role["metadata"]["name"];
    let mut rules: Vec<Value> = Vec::new();
    for other in all.iter().filter(|o| &o["metadata"]["name"] != name) {
        let labels = other["metadata"]["labels"].as_object();
        if selectors.iter().any(|s| label_selector_matches(s, labels)) {
            for r in other["rules"].as_array().into_iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    rules
}

/// Brings every aggregated ClusterRole up to date with the roles its selectors match.
async fn sync(ctx: &Context, client: &Client) -> ApiResult<()> {
    let info = registry::lookup("rbac.authorization.k8s.io", "v1", "clusterroles").expect("clusterroles are served");
    let listed = ctx.informers.informer(PREFIX).await.list();
    let all: Vec<Value> = listed.iter().map(machinery::stored::parse).collect::<ApiResult<_>>()?;
    for role in all.iter().filter(|r| r["aggregationRule"].is_object()) {
        let want = aggregated_rules(role, &all);
        if role["rules"].as_array().map(Vec::as_slice).unwrap_or_default() == want.as_slice() {
            continue;
        }
        let name = role["metadata"]["name"].as_str().unwrap_or_default();
        let set = |current: &Value| -> ApiResult<Value> {
            let mut next = current.clone();
            next["rules"] = json!(aggregated_rules(current, &all));
            Ok(next)
        };
        match client.update(&request(info, None, name, Verb::Update), FieldValidation::Ignore, set).await {
            Ok(()) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The controller, run on the leader ([`crate::controllers::leading`]): syncs once, then after every change
/// to a ClusterRole (changes that arrive together are handled in one pass). It acts as
/// `clusterrole-aggregation-controller`.
pub struct AggregationController {
    pub client: Client,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for AggregationController {
    fn name(&self) -> &'static str {
        "clusterrole-aggregation"
    }

    fn watches(&self) -> Vec<String> {
        vec![PREFIX.into()]
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        sync(ctx, &self.client).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_come_from_matching_roles_in_order() {
        let role = |name: &str, labels: Value, rules: Value| json!({"metadata": {"name": name, "labels": labels}, "rules": rules});
        let r = |v: &str| json!({"verbs": [v], "apiGroups": [""], "resources": ["pods"]});
        let admin = json!({"metadata": {"name": "admin"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}});
        let all = vec![
            admin.clone(),
            role("a", json!({"agg": "true"}), json!([r("get"), r("list")])),
            role("b", json!({"agg": "false"}), json!([r("delete")])),
            role("c", json!({"agg": "true"}), json!([r("list"), r("watch")])),
        ];
        assert_eq!(aggregated_rules(&admin, &all), vec![r("get"), r("list"), r("watch")]);
        let expr = json!({"matchExpressions": [{"key": "agg", "operator": "In", "values": ["false"]}]});
        assert!(label_selector_matches(&expr, all[2]["metadata"]["labels"].as_object()));
        assert!(!label_selector_matches(&expr, all[1]["metadata"]["labels"].as_object()));
        assert!(label_selector_matches(&json!({}), None));
    }
}

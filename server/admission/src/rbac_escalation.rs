//! Escalation prevention, a validating admission step: creating or updating a Role or
//! ClusterRole needs every permission in it (at its scope) or the `escalate` verb on it; creating
//! or updating a binding needs the permissions of the role it refers to (in its namespace) or the
//! `bind` verb on that role. Members of `system:masters` are exempt.

use serde_json::Value;

use access::rbac::index::RoleRef;
use access::rbac::policy::GROUP;
use access::rbac::rules::{compact, covers, Rule};
use access::user::PRIVILEGED_GROUP;
use access::{Attributes, Auth, UserInfo};
use machinery::error::{ApiError, ApiResult};

use super::{Operation, Request, Validating};

/// The step; holds the chain (for `escalate` and `bind`) and the RBAC index (for the rules
/// the user holds).
pub struct Escalation {
    pub auth: Auth,
}

fn rules_of(obj: &Value) -> Vec<Rule> {
    serde_json::from_value(obj["rules"].clone()).unwrap_or_default()
}

fn role_ref(obj: &Value) -> RoleRef {
    let s = |k: &str| obj["roleRef"][k].as_str().unwrap_or_default().to_string();
    RoleRef { kind: s("kind"), name: s("name") }
}

impl Escalation {
    /// Whether the chain lets `user` use `verb` on the role named `name` of `resource`.
    async fn special_verb(&self, user: &UserInfo, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
        let attrs = Attributes {
            user: user.clone(),
            verb: verb.into(),
            resource_request: true,
            api_group: GROUP.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        };
        self.auth.chain.allows(&attrs).await
    }

    /// Refuses unless the user's own rules in `namespace` cover `rules`.
    fn confirm_no_escalation(&self, user: &UserInfo, namespace: &str, rules: &[Rule], refused: &dyn Fn(String) -> ApiError) -> ApiResult<()> {
        let (owner, errors) = self.auth.rbac.rules_for(user, namespace);
        let Err(missing) = covers(&owner, rules) else { return Ok(()) };
        let mut lines: Vec<String> = compact(missing).iter().map(Rule::compact_string).collect();
        lines.sort();
        lines.dedup();
        let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
        let mut message = format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            groups.join(" "),
            lines.join("\n")
        );
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(refused(message))
    }
}

#[async_trait::async_trait]
impl Validating for Escalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let info = r.req.info;
        let (Some(obj), true) = (r.object, info.group == GROUP) else { return Ok(()) };
        let user = &*r.req.user;
        if r.operation == Operation::Delete || user.in_group(PRIVILEGED_GROUP) {
            return Ok(());
        }
        let namespace = r.req.namespace.clone().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let refused = |message: String| ApiError::forbidden(GROUP, info.resource, &name, message);
        match info.resource {
            "roles" | "clusterroles" => {
                if r.old.is_some_and(|old| old["rules"] == obj["rules"] && old["aggregationRule"] == obj["aggregationRule"]) {
                    return Ok(());
                }
                if self.special_verb(user, "escalate", info.resource, &namespace, &name).await {
                    return Ok(());
                }
                self.confirm_no_escalation(user, &namespace, &rules_of(obj), &refused)?;
                if obj.get("aggregationRule").is_some_and(|a| !a.is_null()) {
                    let all = Rule { verbs: vec!["*".into()], api_groups: vec!["*".into()], resources: vec!["*".into()], ..Default::default() };
                    let urls = Rule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..Default::default() };
                    self.confirm_no_escalation(user, &namespace, &[all, urls], &|_| {
                        refused("must have cluster-admin privileges to use the aggregationRule".into())
                    })?;
                }
                Ok(())
            }
            "rolebindings" | "clusterrolebindings" => {
                if r.old.is_some_and(|old| old["roleRef"] == obj["roleRef"] && old["subjects"] == obj["subjects"]) {
                    return Ok(());
                }
                let target = role_ref(obj);
                let resource = if target.kind == "Role" { "roles" } else { "clusterroles" };
                if self.special_verb(user, "bind", resource, &namespace, &target.name).await {
                    return Ok(());
                }
                let rules = self.auth.rbac.role_rules(&target, &namespace).ok_or_else(|| ApiError::NotFound {
                    group: GROUP.into(),
                    resource: resource.into(),
                    name: target.name.clone(),
                })?;
                self.confirm_no_escalation(user, &namespace, &rules, &refused)
            }
            _ => Ok(()),
        }
    }
}

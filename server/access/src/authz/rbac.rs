//! The `RBAC` mode: allowed when a binding that applies to the user (at the cluster scope, or in
//! the request's namespace) refers to a role with a rule that allows the request. Decided from
//! this replica's own index; never denies, only has no opinion.

use std::sync::Arc;

use super::{Authorizer, UserRules, Verdict};
use crate::attributes::Attributes;
use crate::rbac::RbacIndex;
use crate::user::UserInfo;

pub struct Rbac {
    index: Arc<RbacIndex>,
}

impl Rbac {
    pub fn new(index: Arc<RbacIndex>) -> Rbac {
        Rbac { index }
    }
}

/// Errors joined as Kubernetes' error aggregates print them: one alone, several in brackets.
pub fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        many => format!("[{}]", many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")),
    }
}

#[async_trait::async_trait]
impl Authorizer for Rbac {
    fn mode(&self) -> &'static str {
        "RBAC"
    }

    async fn authorize(&self, attrs: &Attributes) -> Verdict {
        let mut allowed_by = None;
        let mut errors = Vec::new();
        self.index.visit(&attrs.user, &attrs.namespace, &mut |binding, rules| match rules {
            Ok(rules) if rules.iter().any(|r| r.allows(attrs)) => {
                allowed_by = Some(format!("{} to {}", binding_name(binding), binding.subject_for(&attrs.user)));
                true
            }
            Ok(_) => false,
            Err(e) => {
                errors.push(e);
                false
            }
        });
        if let Some(by) = allowed_by {
            return Verdict::allow(format!("RBAC: allowed by {by}"));
        }
        let reason = if errors.is_empty() { String::new() } else { format!("RBAC: {}", aggregate(&errors)) };
        Verdict::no_opinion(reason)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let (rules, errors) = self.index.rules_for(user, namespace);
        let resource = rules.iter().filter(|r| !r.resources.is_empty()).cloned().collect();
        let non_resource = rules.into_iter().filter(|r| !r.non_resource_urls.is_empty()).collect();
        UserRules { resource, non_resource, incomplete: false, errors }
    }
}

fn binding_name(b: &crate::rbac::index::Binding) -> String {
    let role = format!("{} {:?}", b.role_ref.kind, b.role_ref.name);
    if b.namespace.is_empty() {
        format!("ClusterRoleBinding {:?} of {role}", b.name)
    } else {
        format!("RoleBinding {:?} of {role}", format!("{}/{}", b.name, b.namespace))
    }
}

//! The `ABAC` mode: a policy file (`--authorization-policy-file`) of one JSON policy per line,
//! `abac.authorization.kubernetes.io/v1beta1` or the unversioned (v0) form, any of which allows.

use std::path::Path;

use serde::Deserialize;

use super::{Authorizer, UserRules, Verdict};
use crate::attributes::Attributes;
use crate::rbac::rules::Rule;
use crate::user::{UserInfo, ALL_AUTHENTICATED};

const GROUP_VERSION: &str = "abac.authorization.kubernetes.io/v1beta1";
const GROUP_VERSION_V0: &str = "abac.authorization.kubernetes.io/v0";

/// One policy, in the form both file versions convert to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    pub user: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub readonly: bool,
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub non_resource_path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    spec: Option<Policy>,
    #[serde(flatten)]
    v0: Policy,
}

/// The policies of a file, in order.
#[derive(Debug, Default)]
pub struct Abac {
    policies: Vec<Policy>,
}

impl Abac {
    /// Reads the policy file at `path`.
    pub fn from_file(path: &Path) -> Result<Abac, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("error reading policy file {}: {e}", path.display()))?;
        Abac::parse(&text).map_err(|(line, data, e)| format!("error reading policy file {}, line {line}: {data}: {e}", path.display()))
    }

    /// Parses a policy file's text; an error names its line (1-based), the line and the cause.
    pub fn parse(text: &str) -> Result<Abac, (usize, String, String)> {
        let mut policies = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let parsed: Line = serde_json::from_str(trimmed).map_err(|e| (i + 1, line.to_string(), e.to_string()))?;
            let policy = match (parsed.api_version.as_str(), parsed.kind.as_str(), parsed.spec) {
                (GROUP_VERSION, "Policy", Some(spec)) => from_v1beta1(spec),
                (GROUP_VERSION, "Policy", None) => return Err((i + 1, line.to_string(), "a v1beta1 Policy needs a spec".into())),
                // A version or kind that is missing or not registered reads as the v0 form.
                (v, _, _) if v == GROUP_VERSION_V0 || v != GROUP_VERSION => from_v0(parsed.v0),
                (_, kind, _) => return Err((i + 1, line.to_string(), format!("unrecognized kind {kind:?}"))),
            };
            policies.push(policy);
        }
        Ok(Abac { policies })
    }

    fn matches(p: &Policy, a: &Attributes) -> bool {
        subject_matches(p, &a.user)
            && (a.is_read_only() || !p.readonly)
            && (resource_matches(p, a) || non_resource_matches(p, a))
    }
}

fn from_v1beta1(mut p: Policy) -> Policy {
    if p.user == "*" || p.group == "*" {
        p.group = ALL_AUTHENTICATED.into();
        p.user.clear();
    }
    p
}

fn from_v0(v0: Policy) -> Policy {
    let mut p = Policy { user: v0.user.clone(), group: v0.group.clone(), readonly: v0.readonly, ..Default::default() };
    if v0.user.is_empty() && v0.group.is_empty() {
        p.group = ALL_AUTHENTICATED.into();
    }
    if v0.user == "*" || v0.group == "*" {
        p.group = ALL_AUTHENTICATED.into();
        p.user.clear();
    }
    p.namespace = if v0.namespace.is_empty() { "*".into() } else { v0.namespace.clone() };
    p.resource = if v0.resource.is_empty() { "*".into() } else { v0.resource.clone() };
    p.api_group = "*".into();
    if v0.namespace.is_empty() && v0.resource.is_empty() {
        p.non_resource_path = "*".into();
    }
    p
}

/// The user must match when set, and the group must be one of the user's when set; a policy
/// with neither matches nobody.
fn subject_matches(p: &Policy, user: &UserInfo) -> bool {
    let mut matched = false;
    if !p.user.is_empty() {
        if p.user != "*" && p.user != user.name {
            return false;
        }
        matched = true;
    }
    if !p.group.is_empty() {
        if p.group != "*" && !user.groups.contains(&p.group) {
            return false;
        }
        matched = true;
    }
    matched
}

fn resource_matches(p: &Policy, a: &Attributes) -> bool {
    a.resource_request
        && (p.namespace == "*" || p.namespace == a.namespace)
        && (p.resource == "*" || p.resource == a.resource)
        && (p.api_group == "*" || p.api_group == a.api_group)
}

fn non_resource_matches(p: &Policy, a: &Attributes) -> bool {
    !a.resource_request
        && (p.non_resource_path == "*"
            || p.non_resource_path == a.path
            || (p.non_resource_path.ends_with('*') && a.path.starts_with(p.non_resource_path.trim_end_matches('*'))))
}

fn verbs(readonly: bool) -> Vec<String> {
    if readonly { vec!["get".into(), "list".into(), "watch".into()] } else { vec!["*".into()] }
}

#[async_trait::async_trait]
impl Authorizer for Abac {
    fn mode(&self) -> &'static str {
        "ABAC"
    }

    async fn authorize(&self, attrs: &Attributes) -> Verdict {
        if self.policies.iter().any(|p| Abac::matches(p, attrs)) {
            Verdict::allow("")
        } else {
            Verdict::no_opinion("No policy matched.")
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut rules = UserRules::default();
        for p in self.policies.iter().filter(|p| subject_matches(p, user) && (p.namespace == "*" || p.namespace == namespace)) {
            if !p.resource.is_empty() {
                rules.resource.push(Rule { verbs: verbs(p.readonly), api_groups: vec![p.api_group.clone()], resources: vec![p.resource.clone()], ..Default::default() });
            }
            if !p.non_resource_path.is_empty() {
                rules.non_resource.push(Rule { verbs: verbs(p.readonly), non_resource_urls: vec![p.non_resource_path.clone()], ..Default::default() });
            }
        }
        rules
    }
}

#[cfg(test)]
mod tests;

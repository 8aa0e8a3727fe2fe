//! A FlowSchema's rules, read once from the stored object when it is applied, and matched
//! against a request's attributes without touching JSON.

use serde::Deserialize;
use serde_json::Value;

use access::Attributes;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    #[serde(rename = "nonResourceRules")]
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Subject {
    kind: String,
    user: Named,
    group: Named,
    service_account: ServiceAccount,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Named {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ServiceAccount {
    namespace: String,
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ResourceRule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NonResourceRule {
    verbs: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    urls: Vec<String>,
}

fn has(list: &[String], x: &str) -> bool {
    list.iter().any(|s| s == "*" || s == x)
}

/// A request as the rules see it: its attributes, and its resource with the subresource.
pub struct Request<'a> {
    pub attrs: &'a Attributes,
    pub resource: String,
}

impl Subject {
    fn matches(&self, a: &Attributes) -> bool {
        let user = &a.user;
        match self.kind.as_str() {
            "User" => self.user.name == "*" || self.user.name == user.name,
            "Group" => self.group.name == "*" || user.in_group(&self.group.name),
            "ServiceAccount" => user
                .service_account()
                .is_some_and(|(ns, sa)| self.service_account.namespace == ns && (self.service_account.name == "*" || self.service_account.name == sa)),
            _ => false,
        }
    }
}

impl Rule {
    /// The rules of a stored FlowSchema.
    pub fn of_schema(schema: &Value) -> Vec<Rule> {
        serde_json::from_value(schema["spec"]["rules"].clone()).unwrap_or_default()
    }

    pub fn matches(&self, r: &Request<'_>) -> bool {
        let a = r.attrs;
        if !self.subjects.iter().any(|s| s.matches(a)) {
            return false;
        }
        if a.resource_request {
            self.resource_rules.iter().any(|rule| {
                let scope = if a.namespace.is_empty() { rule.cluster_scope } else { has(&rule.namespaces, &a.namespace) };
                scope && has(&rule.verbs, &a.verb) && has(&rule.api_groups, &a.api_group) && has(&rule.resources, &r.resource)
            })
        } else {
            self.non_resource_rules.iter().any(|rule| {
                has(&rule.verbs, &a.verb)
                    && rule.urls.iter().any(|u| u == "*" || *u == a.path || (u.ends_with('*') && a.path.starts_with(u.trim_end_matches('*'))))
            })
        }
    }
}

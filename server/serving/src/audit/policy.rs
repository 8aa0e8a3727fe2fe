//! The audit policy (`audit.k8s.io/v1` `Policy`, from `--audit-policy-file`): ordered rules, the
//! first that matches a request deciding its level and the stages left out, as kube-apiserver
//! reads them.

use serde::Deserialize;

use access::attributes::Attributes;

/// How much of a request an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// Where in its life a request is when an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    omit_managed_fields: Option<bool>,
}

/// An audit policy as read from its file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// What the policy decides for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Policy {
    /// Reads a policy (YAML or JSON), refusing what kube-apiserver refuses.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let policy: Policy = serde_yaml::from_str(text).map_err(|e| format!("audit policy: {e}"))?;
        if policy.kind != "Policy" || !matches!(policy.api_version.as_str(), "audit.k8s.io/v1" | "audit.k8s.io/v1beta1") {
            return Err(format!("audit policy: kind {:?} of {:?}, not Policy of audit.k8s.io/v1", policy.kind, policy.api_version));
        }
        if policy.rules.is_empty() {
            return Err("audit policy: it has no rules".into());
        }
        for (i, rule) in policy.rules.iter().enumerate() {
            let resource_rule = !rule.resources.is_empty() || !rule.namespaces.is_empty();
            if resource_rule && !rule.non_resource_urls.is_empty() {
                return Err(format!("audit policy: rules[{i}]: rules cannot apply to both regular resources and non-resource URLs"));
            }
            for url in &rule.non_resource_urls {
                if !url.starts_with('/') && url != "*" {
                    return Err(format!("audit policy: rules[{i}].nonResourceURLs: {url:?} must start with '/'"));
                }
            }
        }
        Ok(policy)
    }

    /// The level and omitted stages for a request; `None` level when no rule matches.
    pub fn decide(&self, attrs: &Attributes) -> Decision {
        let Some(rule) = self.rules.iter().find(|r| r.matches(attrs)) else {
            return Decision { level: Level::None, omit_stages: Vec::new(), omit_managed_fields: false };
        };
        let mut omit_stages = self.omit_stages.clone();
        omit_stages.extend(rule.omit_stages.iter().copied());
        Decision { level: rule.level, omit_stages, omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields) }
    }
}

/// `items` empty (any), or holding `value`.
fn any_or(items: &[String], value: &str) -> bool {
    items.is_empty() || items.iter().any(|i| i == value)
}

impl Rule {
    fn matches(&self, attrs: &Attributes) -> bool {
        let user = &attrs.user;
        if !any_or(&self.users, &user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g)) {
            return false;
        }
        if !any_or(&self.verbs, &attrs.verb) {
            return false;
        }
        if attrs.resource_request {
            self.non_resource_urls.is_empty() && self.matches_resource(attrs)
        } else {
            self.resources.is_empty() && self.namespaces.is_empty() && self.matches_path(&attrs.path)
        }
    }

    fn matches_resource(&self, attrs: &Attributes) -> bool {
        if !self.namespaces.is_empty() && !self.namespaces.contains(&attrs.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let full = if attrs.subresource.is_empty() { attrs.resource.clone() } else { format!("{}/{}", attrs.resource, attrs.subresource) };
        self.resources.iter().any(|gr| {
            gr.group == attrs.api_group
                && (gr.resources.is_empty()
                    || gr.resources.iter().any(|r| {
                        r == &full
                            || r == "*"
                            || r.strip_prefix("*/").is_some_and(|sub| sub == attrs.subresource)
                            || r.strip_suffix("/*").is_some_and(|res| res == attrs.resource)
                    }))
                && any_or(&gr.resource_names, &attrs.name)
        })
    }

    fn matches_path(&self, path: &str) -> bool {
        self.non_resource_urls.is_empty()
            || self.non_resource_urls.iter().any(|u| u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use access::UserInfo;

    fn attrs(user: &str, groups: &[&str], verb: &str, path: &str) -> Attributes {
        let user = UserInfo { name: user.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() };
        let mut a = Attributes::of_request(user, &http::Method::GET, path, &machinery::query::Params::default());
        a.verb = verb.into();
        a
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/log", "configmaps"]
    resourceNames: ["special"]
- level: Request
  verbs: ["create", "update", "patch"]
  namespaces: ["prod"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "*/status"]
- level: Metadata
  userGroups: ["system:authenticated"]
  omitStages: [ResponseStarted]
"#;

    #[test]
    fn the_first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let level = |a: &Attributes| p.decide(a).level;
        let authed = &["system:authenticated"][..];
        assert_eq!(level(&attrs("system:kube-proxy", authed, "get", "/api/v1/namespaces/a/secrets/x")), Level::None);
        assert_eq!(level(&attrs("u", authed, "get", "/healthz/etcd")), Level::None);
        assert_eq!(level(&attrs("u", authed, "get", "/version")), Level::None);
        assert_eq!(level(&attrs("u", authed, "get", "/versions")), Level::Metadata);
        assert_eq!(level(&attrs("u", authed, "get", "/api/v1/namespaces/a/configmaps/special")), Level::RequestResponse);
        assert_eq!(level(&attrs("u", authed, "get", "/api/v1/namespaces/a/configmaps/other")), Level::Metadata);
        assert_eq!(level(&attrs("u", authed, "get", "/api/v1/namespaces/a/pods/special/log")), Level::RequestResponse);
        assert_eq!(level(&attrs("u", authed, "create", "/api/v1/namespaces/prod/configmaps")), Level::Request);
        assert_eq!(level(&attrs("u", &[], "create", "/api/v1/namespaces/dev/configmaps")), Level::None);
        assert_eq!(level(&attrs("u", &[], "update", "/api/v1/namespaces/dev/pods/p/status")), Level::Metadata);
        assert_eq!(level(&attrs("u", &[], "get", "/api/v1/namespaces/dev/secrets/s")), Level::Metadata);
        let d = p.decide(&attrs("u", authed, "get", "/apis/apps/v1/deployments"));
        assert_eq!(d.omit_stages, vec![Stage::RequestReceived, Stage::ResponseStarted]);
    }

    #[test]
    fn a_policy_kubernetes_refuses_is_refused() {
        for (text, why) in [
            ("apiVersion: v1\nkind: ConfigMap\nrules: [{level: None}]", "not Policy"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "no rules"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]", "Loud"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, namespaces: [a], nonResourceURLs: [/x]}]", "both"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [x]}]", "must start"),
        ] {
            let err = Policy::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}

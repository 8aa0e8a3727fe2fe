//! RBAC policy rules: whether a rule allows a request, and whether a set of rules covers another
//! (escalation prevention), with the compact form Kubernetes prints missing rules in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attributes::Attributes;

/// A `PolicyRule` of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(default, rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

const ALL: &str = "*";

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

impl Rule {
    /// Whether this rule allows the request.
    pub fn allows(&self, a: &Attributes) -> bool {
        if !self.verb_matches(&a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_url_matches(&a.path);
        }
        (has(&self.api_groups, ALL) || has(&self.api_groups, &a.api_group))
            && self.resource_matches(&a.resource, &a.subresource)
            && (self.resource_names.is_empty() || has(&self.resource_names, &a.name))
    }

    fn verb_matches(&self, verb: &str) -> bool {
        has(&self.verbs, ALL) || has(&self.verbs, verb)
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == ALL {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            // `resource/subresource`, or `*/subresource` for that subresource of anything.
            match r.split_once('/') {
                Some((res, sub)) => sub == subresource && (res == resource || res == ALL),
                None => false,
            }
        })
    }

    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
        })
    }

    /// Whether this rule grants everything `sub` (one broken-down rule) grants.
    fn covers(&self, sub: &Rule) -> bool {
        let verbs = has(&self.verbs, ALL) || has_all(&self.verbs, &sub.verbs);
        let groups = has(&self.api_groups, ALL) || has_all(&self.api_groups, &sub.api_groups);
        let resources = has(&self.resources, ALL)
            || sub.resources.iter().all(|r| {
                has(&self.resources, r) || r.split_once('/').is_some_and(|(_, s)| has(&self.resources, &format!("*/{s}")))
            });
        let urls = sub.non_resource_urls.iter().all(|p| {
            self.non_resource_urls.iter().any(|o| o == p || o.strip_suffix('*').is_some_and(|prefix| p.starts_with(prefix)))
        });
        let names = self.resource_names.is_empty() || (!sub.resource_names.is_empty() && has_all(&self.resource_names, &sub.resource_names));
        verbs && groups && resources && urls && names
    }

    /// The rule split into rules of one verb, group, resource and name (or one URL and verb).
    fn breakdown(&self) -> Vec<Rule> {
        let one = |s: &String| vec![s.clone()];
        let mut out = Vec::new();
        for g in &self.api_groups {
            for r in &self.resources {
                for v in &self.verbs {
                    let base = Rule { verbs: one(v), api_groups: one(g), resources: one(r), ..Default::default() };
                    if self.resource_names.is_empty() {
                        out.push(base);
                    } else {
                        out.extend(self.resource_names.iter().map(|n| Rule { resource_names: one(n), ..base.clone() }));
                    }
                }
            }
        }
        for u in &self.non_resource_urls {
            out.extend(self.verbs.iter().map(|v| Rule { verbs: one(v), non_resource_urls: one(u), ..Default::default() }));
        }
        out
    }

    /// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`, as Kubernetes
    /// prints a rule in escalation errors.
    pub fn compact_string(&self) -> String {
        let q = |v: &[String]| format!("[{}]", v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" "));
        let mut parts = Vec::new();
        for (label, values) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !values.is_empty() {
                parts.push(format!("{label}:{}", q(values)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Whether `owner` covers every rule of `servant`; if not, the broken-down rules it misses.
pub fn covers(owner: &[Rule], servant: &[Rule]) -> Result<(), Vec<Rule>> {
    let missing: Vec<Rule> =
        servant.iter().flat_map(Rule::breakdown).filter(|sub| !owner.iter().any(|o| o.covers(sub))).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

/// Merges rules of one group and resource (and at most one name) that differ only in their
/// verbs, as Kubernetes compacts the rules it reports missing.
pub fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut simple: BTreeMap<(String, String, Option<String>), usize> = BTreeMap::new();
    let mut out: Vec<Rule> = Vec::new();
    for r in rules {
        let mergeable = r.api_groups.len() == 1 && r.resources.len() == 1 && r.resource_names.len() <= 1 && r.non_resource_urls.is_empty();
        if !mergeable {
            out.push(r);
            continue;
        }
        let key = (r.api_groups[0].clone(), r.resources[0].clone(), r.resource_names.first().cloned());
        match simple.get(&key) {
            Some(&i) => out[i].verbs.extend(r.verbs),
            None => {
                simple.insert(key, out.len());
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Rule { verbs: v(verbs), api_groups: v(groups), resources: v(resources), resource_names: v(names), non_resource_urls: vec![] }
    }

    fn req(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn matching() {
        let r = rule(&["get", "list"], &[""], &["pods", "pods/log"], &[]);
        assert!(r.allows(&req("get", "", "pods", "", "p")));
        assert!(r.allows(&req("get", "", "pods", "log", "p")));
        assert!(!r.allows(&req("get", "", "pods", "exec", "p")));
        assert!(!r.allows(&req("delete", "", "pods", "", "p")));
        assert!(!r.allows(&req("get", "apps", "pods", "", "p")));
        let star_sub = rule(&["*"], &["*"], &["*/scale"], &[]);
        assert!(star_sub.allows(&req("update", "apps", "deployments", "scale", "d")));
        assert!(!star_sub.allows(&req("update", "apps", "deployments", "", "d")));
        let named = rule(&["get"], &[""], &["configmaps"], &["a"]);
        assert!(named.allows(&req("get", "", "configmaps", "", "a")));
        assert!(!named.allows(&req("get", "", "configmaps", "", "b")));
        assert!(!named.allows(&req("get", "", "configmaps", "", "")));
        let urls = Rule { verbs: vec!["get".into()], non_resource_urls: vec!["/healthz".into(), "/api/*".into()], ..Default::default() };
        let path = |p: &str| Attributes { verb: "get".into(), path: p.into(), ..Default::default() };
        assert!(urls.allows(&path("/healthz")));
        assert!(urls.allows(&path("/api/v1")));
        assert!(!urls.allows(&path("/healthz/ping")));
        assert!(!urls.allows(&req("get", "", "pods", "", "")));
    }

    #[test]
    fn covering() {
        let owner = vec![rule(&["get", "list"], &[""], &["configmaps"], &[]), rule(&["*"], &["apps"], &["*/scale"], &[])];
        assert!(covers(&owner, &[rule(&["get"], &[""], &["configmaps"], &["x"])]).is_ok());
        assert!(covers(&owner, &[rule(&["update"], &["apps"], &["deployments/scale"], &[])]).is_ok());
        let missing = covers(&owner, &[rule(&["get", "delete", "create"], &[""], &["configmaps", "secrets"], &[])]).unwrap_err();
        let compacted: Vec<String> = compact(missing).iter().map(Rule::compact_string).collect();
        assert_eq!(
            compacted,
            vec![
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["delete" "create"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "create"]}"#,
            ]
        );
        let named_owner = vec![rule(&["get"], &[""], &["configmaps"], &["a"])];
        assert!(covers(&named_owner, &[rule(&["get"], &[""], &["configmaps"], &[])]).is_err());
    }
}

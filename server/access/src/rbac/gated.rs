//! The parts of the default policy that feature gates decide, as kube-apiserver decides them
//! (data in `gated-policy.yaml`). `bootstrap-policy.yaml` was recorded at the gates' defaults,
//! so it holds the parts on by default: [`apply`] takes those out and puts back in what the gates
//! in force turn on, each rule where kube-apiserver's code appends it.

use std::sync::LazyLock;

use machinery::features::Features;
use serde::Deserialize;
use serde_json::{json, Value};

use super::policy::{AUTOUPDATE, GROUP};

/// One gated part of the policy: added while all of `gates` are on.
#[derive(Deserialize)]
struct Part {
    gates: Vec<String>,
    #[serde(flatten)]
    adds: Adds,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Adds {
    /// A ClusterRole of its own, and the ClusterRoleBinding of the same name to `subjects`.
    Role {
        #[serde(rename = "newRole")]
        name: String,
        rules: Vec<Value>,
        subjects: Vec<Value>,
    },
    /// URLs added to the role's non-resource rule, which Kubernetes keeps sorted.
    Urls { role: String, urls: Vec<Value> },
    /// Rules added to a role: at index `at` of its rules, else at the end.
    Rules {
        role: String,
        rules: Vec<Value>,
        #[serde(default)]
        at: Option<usize>,
    },
}

static PARTS: LazyLock<Vec<Part>> = LazyLock::new(|| serde_yaml::from_str(include_str!("gated-policy.yaml")).expect("the gated policy is valid"));

impl Part {
    fn on(&self, features: &Features) -> bool {
        self.gates.iter().all(|g| features.enabled(g))
    }

    /// A whole role on both at the defaults and now stays where the recording has it (rules and
    /// URLs come out and go back in, so that each lands in kube-apiserver's order).
    fn stays(&self, defaults: &Features, features: &Features) -> bool {
        matches!(self.adds, Adds::Role { .. }) && self.on(defaults) && self.on(features)
    }
}

fn metadata(name: &str) -> Value {
    json!({"annotations": {AUTOUPDATE: "true"}, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}, "name": name})
}

fn rules_of<'a>(objects: &'a mut [Value], role: &str) -> &'a mut Vec<Value> {
    objects
        .iter_mut()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == role)
        .and_then(|o| o.get_mut("rules").and_then(Value::as_array_mut))
        .unwrap_or_else(|| panic!("the default policy has no ClusterRole {role} with rules"))
}

fn urls_of<'a>(objects: &'a mut [Value], role: &str) -> &'a mut Vec<Value> {
    rules_of(objects, role)
        .iter_mut()
        .find_map(|r| r.get_mut("nonResourceURLs").and_then(Value::as_array_mut))
        .unwrap_or_else(|| panic!("the ClusterRole {role} has no non-resource rule"))
}

/// Takes out of `objects` what `part` put in.
fn take_out(objects: &mut Vec<Value>, part: &Part) {
    match &part.adds {
        Adds::Role { name, .. } => {
            let before = objects.len();
            objects.retain(|o| !(o["metadata"]["name"] == name.as_str() && (o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding")));
            assert_eq!(before - objects.len(), 2, "the recorded policy has the ClusterRole {name} and its binding");
        }
        Adds::Urls { role, urls } => {
            let have = urls_of(objects, role);
            assert!(urls.iter().all(|u| have.contains(u)), "the recorded {role} has {urls:?}");
            have.retain(|u| !urls.contains(u));
        }
        Adds::Rules { role, rules, .. } => {
            let have = rules_of(objects, role);
            for rule in rules.iter().rev() {
                let i = have.iter().rposition(|r| r == rule).unwrap_or_else(|| panic!("the recorded {role} lacks {rule}"));
                have.remove(i);
            }
        }
    }
}

/// Puts `part` into `objects`: a new role after the last ClusterRole, its binding after the
/// last ClusterRoleBinding.
fn put_in(objects: &mut Vec<Value>, part: &Part) {
    match &part.adds {
        Adds::Role { name, rules, subjects } => {
            let role = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": metadata(name), "rules": rules});
            let binding = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding", "metadata": metadata(name),
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}, "subjects": subjects});
            for object in [role, binding] {
                let at = objects.iter().rposition(|o| o["kind"] == object["kind"]).map_or(objects.len(), |i| i + 1);
                objects.insert(at, object);
            }
        }
        Adds::Urls { role, urls } => {
            let have = urls_of(objects, role);
            have.extend(urls.iter().cloned());
            have.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        }
        Adds::Rules { role, rules, at } => {
            let have = rules_of(objects, role);
            let at = at.unwrap_or(have.len());
            have.splice(at..at, rules.iter().cloned());
        }
    }
}

/// The recorded policy (`objects`, at the default gates of the binary's version) made the policy
/// of `features`: the parts on by default come out, last first, and the parts `features` turns
/// on go in, in kube-apiserver's order.
pub(super) fn apply(mut objects: Vec<Value>, features: &Features) -> Vec<Value> {
    let (defaults, _) = Features::from_flags("", "", "").expect("the default gates are valid");
    for part in PARTS.iter().rev().filter(|p| p.on(&defaults) && !p.stays(&defaults, features)) {
        take_out(&mut objects, part);
    }
    for part in PARTS.iter().filter(|p| p.on(features) && !p.stays(&defaults, features)) {
        put_in(&mut objects, part);
    }
    objects
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::policy::recorded;
    use super::*;

    fn policy(emulated: &str, gates: &str) -> Vec<Value> {
        let (features, _) = Features::from_flags(emulated, "", gates).unwrap();
        apply(recorded(), &features)
    }

    fn by_name(objects: &[Value]) -> BTreeMap<String, Value> {
        let key = |o: &Value| {
            let namespace = o["metadata"]["namespace"].as_str().map(|n| format!("{n}/")).unwrap_or_default();
            format!("{} {namespace}{}", o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap())
        };
        objects.iter().map(|o| (key(o), o.clone())).collect()
    }

    /// How `policy` differs from the recording, sorted: `+kind name` and `-kind name` for whole
    /// objects, `kind name: +rule` and `kind name: -rule` for rules.
    fn changes(policy: &[Value]) -> Vec<String> {
        let (before, after) = (by_name(&recorded()), by_name(policy));
        let mut out = Vec::new();
        for (name, old) in &before {
            let Some(new) = after.get(name) else {
                out.push(format!("-{name}"));
                continue;
            };
            let rules = |v: &Value| v["rules"].as_array().cloned().unwrap_or_default();
            let (old, new) = (rules(old), rules(new));
            out.extend(old.iter().filter(|r| !new.contains(r)).map(|r| format!("{name}: -{r}")));
            out.extend(new.iter().filter(|r| !old.contains(r)).map(|r| format!("{name}: +{r}")));
        }
        out.extend(after.keys().filter(|k| !before.contains_key(*k)).map(|k| format!("+{k}")));
        out.sort();
        out
    }

    fn sorted(mut lines: Vec<String>) -> Vec<String> {
        lines.sort();
        lines
    }

    fn rules<'a>(policy: &'a [Value], role: &str) -> &'a Vec<Value> {
        policy.iter().find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == role).and_then(|o| o["rules"].as_array()).unwrap()
    }

    /// `o`'s fields but `skip` and those that are null.
    fn fields_of(o: &Value, skip: &[&str]) -> Value {
        Value::Object(o.as_object().unwrap().iter().filter(|(k, v)| !skip.contains(&k.as_str()) && !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    /// The policy as kube-apiserver serves it when listed: by `resource namespace/name`, each
    /// object without its metadata and kind, a null field left out.
    fn as_served(objects: &[Value]) -> BTreeMap<String, Value> {
        objects
            .iter()
            .map(|o| {
                let resource = format!("{}s", o["kind"].as_str().unwrap().to_lowercase());
                let key = format!("{resource} {}/{}", o["metadata"]["namespace"].as_str().unwrap_or_default(), o["metadata"]["name"].as_str().unwrap());
                (key, fields_of(o, &["metadata", "apiVersion", "kind"]))
            })
            .collect()
    }

    /// Recorded from kube-apiserver 1.36.2 started with `--emulated-version=1.34`, and again with
    /// 1.35 (the same answer): every object labelled `kubernetes.io/bootstrapping=rbac-defaults`,
    /// listed right after start (no controller manager, so the aggregated roles have no rules).
    #[test]
    fn at_1_34_and_1_35_the_policy_is_kube_apiservers() {
        let golden: BTreeMap<String, Value> = serde_json::from_str(include_str!("testdata/kube-apiserver-1.34-and-1.35.json")).unwrap();
        let golden: BTreeMap<String, Value> = golden.into_iter().map(|(k, v)| (k, fields_of(&v, &[]))).collect();
        for emulated in ["1.34", "1.35"] {
            let ours = as_served(&policy(emulated, ""));
            let differ: Vec<&String> = golden.keys().chain(ours.keys()).filter(|k| golden.get(*k) != ours.get(*k)).collect();
            assert!(differ.is_empty(), "at {emulated} the policy differs from kube-apiserver's in {differ:?}");
        }
    }

    #[test]
    fn at_the_defaults_the_policy_is_the_recording() {
        assert_eq!(policy("", ""), recorded());
        assert_eq!(policy("1.36", ""), recorded());
    }

    #[test]
    fn every_gate_named_is_one_of_kube_apiserver_s() {
        let (features, _) = Features::from_flags("", "", "").unwrap();
        let known: Vec<&str> = features.all().map(|(name, _, _)| name).collect();
        for gate in PARTS.iter().flat_map(|p| &p.gates) {
            assert!(known.contains(&gate.as_str()), "{gate}");
        }
    }

    #[test]
    fn emulating_1_34_or_1_35_leaves_out_what_1_36_turned_on() {
        let monitoring = |urls: &[&str]| json!({"nonResourceURLs": urls, "verbs": ["get"]});
        let base = ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"];
        let binding = json!({"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/binding"], "verbs": ["patch", "update"]});
        let want = sorted(vec![
            "-ClusterRole system:controller:device-taint-eviction-controller".into(),
            "-ClusterRoleBinding system:controller:device-taint-eviction-controller".into(),
            format!("ClusterRole system:controller:resource-claim-controller: -{binding}"),
            format!("ClusterRole system:kube-scheduler: -{}", json!({"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["create", "delete"]})),
            format!("ClusterRole system:kube-scheduler: -{binding}"),
            format!("ClusterRole system:monitoring: -{}", monitoring(&[&["/flagz"], &base[..], &["/statusz"]].concat())),
            format!("ClusterRole system:monitoring: +{}", monitoring(&base)),
        ]);
        assert_eq!(changes(&policy("1.34", "")), want);
        assert_eq!(changes(&policy("1.35", "")), want);
    }

    #[test]
    fn a_gate_turned_on_adds_its_rules_and_roles() {
        let got = policy("", "PodCertificateRequest=true");
        let node_rule = json!({"apiGroups": ["certificates.k8s.io"], "resources": ["podcertificaterequests"], "verbs": ["create", "get", "list", "watch"]});
        assert_eq!(
            changes(&got),
            sorted(vec![
                "+ClusterRole system:controller:podcertificaterequestcleaner".into(),
                "+ClusterRoleBinding system:controller:podcertificaterequestcleaner".into(),
                format!("ClusterRole system:node: +{node_rule}"),
            ])
        );
        assert_eq!(rules(&got, "system:node").last(), Some(&node_rule));
        // New objects come after the last of their kind: the role before the namespaced roles.
        assert_eq!(by_name(&got).len(), got.len(), "no object twice");
        let role_at = got.iter().position(|o| o["metadata"]["name"] == "system:controller:podcertificaterequestcleaner").unwrap();
        assert_eq!(got[role_at + 1]["kind"], "Role");
        let binding = &got[got.iter().rposition(|o| o["kind"] == "ClusterRoleBinding").unwrap()];
        assert_eq!(binding["subjects"], json!([{"kind": "ServiceAccount", "name": "podcertificaterequestcleaner", "namespace": "kube-system"}]));
        assert_eq!(binding["roleRef"], json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "system:controller:podcertificaterequestcleaner"}));
    }

    #[test]
    fn rules_turned_on_land_where_kube_apiserver_appends_them() {
        let got = policy("", "GenericWorkload=true,DRADeviceTaintRules=true");
        let resources = |role: &str| -> Vec<String> { rules(&got, role).iter().map(|r| r["resources"][0].as_str().unwrap().to_string()).collect() };
        let scheduler = resources("system:kube-scheduler");
        let dra = ["deviceclasses", "resourceclaims", "resourceclaims/status", "pods/finalizers", "resourceslices"];
        assert_eq!(scheduler[scheduler.len() - 10..], [&dra[..], &["resourceclaims", "devicetaintrules", "resourceclaims/binding", "podgroups", "podgroups/status"]].concat());
        assert_eq!(resources("system:controller:device-taint-eviction-controller")[6..], ["devicetaintrules/status", "devicetaintrules"]);
        assert_eq!(resources("system:aggregate-to-view").last().unwrap(), "podgroups");
        assert_eq!(resources("system:aggregate-to-edit").last().unwrap(), "podgroups");
        let added: Vec<String> = changes(&got).into_iter().filter(|c| c.starts_with('+')).collect();
        assert_eq!(added, ["+ClusterRole system:controller:podgroup-protection-controller", "+ClusterRoleBinding system:controller:podgroup-protection-controller"]);
        assert_eq!(changes(&got).len(), 9, "the two objects, and 1 rule in view, 1 in edit, 3 in the scheduler, 2 in the eviction controller: {:#?}", changes(&got));
    }

    #[test]
    fn with_every_gate_on_every_part_is_in() {
        let got = policy("", "AllAlpha=true,AllBeta=true");
        assert_eq!(by_name(&got).len(), got.len(), "no object twice");
        for part in PARTS.iter() {
            match &part.adds {
                Adds::Urls { role, urls } => {
                    let have = rules(&got, role)[0]["nonResourceURLs"].as_array().unwrap();
                    assert!(urls.iter().all(|u| have.contains(u)), "{role}: {urls:?}");
                }
                Adds::Role { name: role, rules: added, .. } | Adds::Rules { role, rules: added, .. } => {
                    assert!(added.iter().all(|r| rules(&got, role).contains(r)), "{role}: {added:?}");
                }
            }
        }
    }

    #[test]
    fn a_gate_turned_off_takes_its_rules_and_roles_out() {
        let token = json!({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]});
        assert_eq!(changes(&policy("", "KubeletServiceAccountTokenForCredentialProviders=false")), [format!("ClusterRole system:node: -{token}")]);
        assert_eq!(
            changes(&policy("", "DRADeviceTaints=false")),
            ["-ClusterRole system:controller:device-taint-eviction-controller", "-ClusterRoleBinding system:controller:device-taint-eviction-controller"]
        );
        let urls = rules(&policy("", "ComponentFlagz=false"), "system:monitoring")[0]["nonResourceURLs"].clone();
        assert_eq!(urls, json!(["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*", "/statusz"]));
    }
}

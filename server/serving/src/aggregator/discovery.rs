//! Discovery of the groups extension servers serve: each APIService that names a Service adds
//! its group/version to `/apis` and `/apis/{group}` (to the group's entry when this server
//! serves other versions of it; whether available or not, as
//! kube-aggregator lists them), ordered by `groupPriorityMinimum` and `versionPriority`; in
//! aggregated discovery each version carries the resources its server lists at
//! `/apis/{group}/{version}`, fetched at most once a minute, and is `Stale` (with what was last
//! fetched) while its server cannot be asked.

use serde_json::{json, Value};

use super::{cached, remotes};
use access::UserInfo;
use crate::context::Ctx;

/// The remote groups with their versions: groups by their highest `groupPriorityMinimum`, then
/// by name; within a group, versions by `versionPriority`, then GA before beta before alpha.
fn remote_groups(ctx: &Ctx) -> Vec<(String, Vec<Value>)> {
    ordered(remotes(ctx))
}

fn ordered(apiservices: Vec<Value>) -> Vec<(String, Vec<Value>)> {
    let priority = |a: &Value, field: &str| a["spec"][field].as_i64().unwrap_or(0);
    let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
    for a in apiservices {
        let group = a["spec"]["group"].as_str().unwrap_or_default().to_string();
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, versions)) => versions.push(a),
            None => groups.push((group, vec![a])),
        }
    }
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| {
            let name = |x: &Value| machinery::crd::served::priority(x["spec"]["version"].as_str().unwrap_or_default());
            priority(b, "versionPriority").cmp(&priority(a, "versionPriority")).then_with(|| name(b).cmp(&name(a)))
        });
    }
    let top = |versions: &[Value]| versions.iter().map(|a| priority(a, "groupPriorityMinimum")).max().unwrap_or(0);
    groups.sort_by(|(ga, va), (gb, vb)| top(vb).cmp(&top(va)).then_with(|| ga.cmp(gb)));
    groups
}

fn api_group(group: &str, apiservices: &[Value]) -> Value {
    let versions: Vec<Value> = apiservices
        .iter()
        .map(|a| {
            let v = a["spec"]["version"].as_str().unwrap_or_default();
            json!({"groupVersion": format!("{group}/{v}"), "version": v})
        })
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
}

/// Adds the remote groups to the `/apis` group list.
pub fn extend_group_list(ctx: &Ctx, doc: &mut Value) {
    let Some(groups) = doc["groups"].as_array_mut() else { return };
    for (group, apiservices) in remote_groups(ctx) {
        let remote = api_group(&group, &apiservices);
        let versions = remote["versions"].as_array().cloned().unwrap_or_default();
        add_versions(groups, &group, remote, versions);
    }
}

/// Adds `versions` to the entry of `group` in a group list (named at `name`, or at
/// `metadata.name` in aggregated discovery), after the versions this server serves itself; or
/// adds `entry` when this server serves none of the group.
fn add_versions(entries: &mut Vec<Value>, group: &str, entry: Value, versions: Vec<Value>) {
    match entries.iter_mut().find(|e| e["name"] == group || e["metadata"]["name"] == group) {
        Some(local) => {
            if let Some(list) = local["versions"].as_array_mut() {
                list.extend(versions);
            }
        }
        None => entries.push(entry),
    }
}

/// `/apis/{group}`: `local` (this server's versions of the group, if any) with the versions
/// extension servers serve.
pub fn group(ctx: &Ctx, group: &str, local: Option<Value>) -> Option<Value> {
    let Some((name, apiservices)) = remote_groups(ctx).into_iter().find(|(g, _)| g == group) else { return local };
    let remote = api_group(&name, &apiservices);
    let mut doc = match local {
        Some(mut doc) => {
            if let (Some(list), Some(more)) = (doc["versions"].as_array_mut(), remote["versions"].as_array()) {
                list.extend(more.iter().cloned());
            }
            doc
        }
        None => remote,
    };
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// An `APIResourceList` as aggregated discovery gives a version's resources: each resource with
/// its subresources inside it.
fn to_discovery(group: &str, version: &str, list: &Value) -> Vec<Value> {
    let entries = list["resources"].as_array().cloned().unwrap_or_default();
    let kind = |r: &Value| json!({"group": r["group"].as_str().unwrap_or(group), "version": r["version"].as_str().unwrap_or(version), "kind": r["kind"]});
    let mut out: Vec<Value> = Vec::new();
    for r in entries.iter().filter(|r| !r["name"].as_str().unwrap_or_default().contains('/')) {
        let mut e = json!({
            "resource": r["name"],
            "responseKind": kind(r),
            "scope": if r["namespaced"] == true { "Namespaced" } else { "Cluster" },
            "singularResource": r["singularName"],
            "verbs": r["verbs"],
        });
        for field in ["shortNames", "categories"] {
            if r[field].as_array().is_some_and(|a| !a.is_empty()) {
                e[field] = r[field].clone();
            }
        }
        let prefix = format!("{}/", r["name"].as_str().unwrap_or_default());
        let subs: Vec<Value> = entries
            .iter()
            .filter_map(|s| Some((s, s["name"].as_str()?.strip_prefix(&prefix)?)))
            .map(|(s, sub)| json!({"subresource": sub, "responseKind": kind(s), "verbs": s["verbs"]}))
            .collect();
        if !subs.is_empty() {
            e["subresources"] = json!(subs);
        }
        out.push(e);
    }
    out
}

/// Adds the remote groups to an aggregated discovery list (`/apis`).
pub async fn extend_aggregated(ctx: &Ctx, doc: &mut Value) {
    let mut items = Vec::new();
    for (group, apiservices) in remote_groups(ctx) {
        let mut versions = Vec::new();
        for a in &apiservices {
            let version = a["spec"]["version"].as_str().unwrap_or_default();
            let asker = UserInfo { name: "system:kube-aggregator".into(), groups: vec!["system:masters".into()], ..Default::default() };
            let (list, fresh) = cached(ctx, a, &format!("/apis/{group}/{version}"), &asker).await;
            let resources = list.map(|l| to_discovery(&group, version, &l)).unwrap_or_default();
            versions.push(json!({"version": version, "resources": resources, "freshness": if fresh { "Current" } else { "Stale" }}));
        }
        items.push((group, versions));
    }
    let Some(list) = doc["items"].as_array_mut() else { return };
    for (group, versions) in items {
        let entry = json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions});
        add_versions(list, &group, entry, versions);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_served_here_gets_the_remote_versions() {
        let mut groups = vec![json!({"name": "stable.example.com", "versions": [{"version": "v1"}]})];
        add_versions(&mut groups, "stable.example.com", json!({}), vec![json!({"version": "v2"})]);
        add_versions(&mut groups, "metrics.example.com", json!({"name": "metrics.example.com"}), vec![]);
        assert_eq!(groups[0]["versions"], json!([{"version": "v1"}, {"version": "v2"}]));
        assert_eq!(groups[1]["name"], "metrics.example.com");
    }

    #[test]
    fn groups_and_versions_go_by_priority() {
        let a = |group: &str, version: &str, g: i64, v: i64| json!({"spec": {"group": group, "version": version, "groupPriorityMinimum": g, "versionPriority": v}});
        let groups = ordered(vec![a("b.io", "v1", 100, 10), a("a.io", "v1alpha1", 200, 5), a("a.io", "v1", 100, 5), a("a.io", "v2", 100, 20), a("c.io", "v1", 100, 1)]);
        let names: Vec<(&str, Vec<&str>)> = groups.iter().map(|(g, vs)| (g.as_str(), vs.iter().map(|v| v["spec"]["version"].as_str().unwrap()).collect())).collect();
        assert_eq!(names, [("a.io", vec!["v2", "v1", "v1alpha1"]), ("b.io", vec!["v1"]), ("c.io", vec!["v1"])]);
    }

    #[test]
    fn resource_lists_become_aggregated_entries() {
        let list = json!({"resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget", "verbs": ["get"]},
            {"name": "gadgets", "singularName": "gadget", "namespaced": false, "kind": "Gadget", "verbs": ["get"]},
        ]});
        let out = to_discovery("example.com", "v1", &list);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["responseKind"], json!({"group": "example.com", "version": "v1", "kind": "Widget"}));
        assert_eq!(out[0]["subresources"][0]["subresource"], "status");
        assert_eq!(out[0]["shortNames"], json!(["wd"]));
        assert_eq!(out[1]["scope"], "Cluster");
    }
}

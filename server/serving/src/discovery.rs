//! API discovery derived from the registry table: `/api`, `/apis`, `/apis/{g}`, the resource
//! lists of each group version, and aggregated discovery (`apidiscovery.k8s.io/v2`).

use serde_json::{json, Value};

use machinery::registry::{self, served, ResourceInfo};

/// Content type of an aggregated discovery response.
pub const AGGREGATED_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The named groups in table order, each with its versions.
fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in served().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => versions.push(r.version),
            Some(_) => {}
            None => out.push((r.group, vec![r.version])),
        }
    }
    out
}

fn group_json(group: &str, versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs[0]})
}

/// `/api`.
pub fn api_versions(address: &str) -> Value {
    let host = address.trim_start_matches("https://");
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
}

/// `/apis`.
pub fn api_group_list() -> Value {
    let groups: Vec<Value> = groups().iter().map(|(g, v)| group_json(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub fn api_group(group: &str) -> Option<Value> {
    let (g, v) = groups().into_iter().find(|(g, _)| *g == group)?;
    let mut doc = group_json(g, &v);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn in_version<'a>(group: &'a str, version: &'a str) -> impl Iterator<Item = &'static ResourceInfo> + 'a {
    served().filter(move |r| r.group == group && r.version == version)
}

/// A subresource's kind and verbs.
fn subresource(sub: &str, info: &ResourceInfo) -> (Value, Vec<&'static str>) {
    match sub {
        "scale" => (json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}), vec!["get", "patch", "update"]),
        "finalize" => (json!({"group": "", "version": "v1", "kind": info.kind}), vec!["update"]),
        "binding" => (json!({"group": "", "version": "v1", "kind": "Binding"}), vec!["create"]),
        "eviction" => (json!({"group": "policy", "version": "v1", "kind": "Eviction"}), vec!["create"]),
        "token" => (json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}), vec!["create"]),
        "log" => (json!({"group": "", "version": "v1", "kind": "Pod"}), vec!["get"]),
        "exec" => (json!({"group": "", "version": "v1", "kind": "PodExecOptions"}), vec!["create", "get"]),
        "attach" => (json!({"group": "", "version": "v1", "kind": "PodAttachOptions"}), vec!["create", "get"]),
        "portforward" => (json!({"group": "", "version": "v1", "kind": "PodPortForwardOptions"}), vec!["create", "get"]),
        "proxy" => (json!({"group": "", "version": "v1", "kind": format!("{}ProxyOptions", info.kind)}), vec!["create", "delete", "get", "patch", "update"]),
        _ => (json!({"group": info.group, "version": info.version, "kind": info.kind}), vec!["get", "patch", "update"]),
    }
}

/// Kubernetes' digest of the version a resource is stored in (`group/version/kind`, the first
/// 8 bytes of its SHA-256 in base64), which changes when the stored form does.
fn storage_version_hash(r: &ResourceInfo) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let version = match (r.stored_as, registry::custom::version(r)) {
        (Some(stored), _) => stored.api_version.rsplit('/').next().unwrap_or(r.version).to_string(),
        (None, Some(v)) => v.storage_version.clone(),
        (None, None) => r.version.to_string(),
    };
    let digest = Sha256::digest(format!("{}/{version}/{}", r.group, r.kind));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// `/api/v1` and `/apis/{group}/{version}`.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in in_version(group, version) {
        let mut entry = json!({
            "name": r.resource, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs, "storageVersionHash": storage_version_hash(r),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        for sub in r.subresources {
            let (kind, verbs) = subresource(sub, r);
            let mut e = json!({"name": format!("{}/{sub}", r.resource), "singularName": "", "namespaced": r.namespaced, "kind": kind["kind"], "verbs": verbs});
            if *sub == "scale" {
                e["group"] = json!("autoscaling");
                e["version"] = json!("v1");
            }
            resources.push(e);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

fn aggregated_group(group: &str, versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = in_version(group, v)
                .map(|r| {
                    let subs: Vec<Value> = r
                        .subresources
                        .iter()
                        .map(|s| {
                            let (kind, verbs) = subresource(s, r);
                            json!({"subresource": s, "responseKind": kind, "verbs": verbs})
                        })
                        .collect();
                    let mut e = json!({
                        "resource": r.resource,
                        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": r.singular,
                        "verbs": r.verbs,
                    });
                    if !r.short_names.is_empty() {
                        e["shortNames"] = json!(r.short_names);
                    }
                    if !r.categories.is_empty() {
                        e["categories"] = json!(r.categories);
                    }
                    if !subs.is_empty() {
                        e["subresources"] = json!(subs);
                    }
                    e
                })
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut g = json!({"metadata": {"creationTimestamp": null}, "versions": vs});
    if !group.is_empty() {
        g["metadata"]["name"] = json!(group);
    }
    g
}

/// Aggregated discovery: the core group for `/api`, the named groups for `/apis`.
pub fn aggregated(core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![aggregated_group("", &["v1"])]
    } else {
        groups().iter().map(|(g, v)| aggregated_group(g, v)).collect()
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_resources_and_subresources() {
        let core = api_resource_list("", "v1").unwrap();
        let names: Vec<&str> = core["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"configmaps") && names.contains(&"pods/status"));
        let apps = api_resource_list("apps", "v1").unwrap();
        let scale = apps["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert!(api_group_list()["groups"].as_array().unwrap().iter().any(|g| g["name"] == "apps"));
        let agg = aggregated(false);
        assert!(agg["items"].as_array().unwrap().iter().any(|g| g["metadata"]["name"] == "batch"));
        let ns = aggregated(true)["items"][0]["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "namespaces").cloned().unwrap();
        assert_eq!(ns["scope"], "Cluster");
    }
}

//! The ValidatingAdmissionPolicy status controller (kube-controller-manager's
//! `validatingadmissionpolicy-status-controller`), on the Raft leader: a policy whose status has
//! not seen its generation gets each validation's `expression` and `messageExpression` checked
//! against the schemas of the kinds its match constraints name (at most ten; rules with
//! wildcards name none), and `status.typeChecking.expressionWarnings` and
//! `status.observedGeneration` written. A warning says, per kind, what cel-go's checker would.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use machinery::expr::check::check;
use machinery::expr::admission::{self, definitions};
use machinery::expr::types::{of_schema, Definitions, Ty};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry::{self, custom, ResourceInfo};
use access::request::{ResourceRequest, Verb};

const PREFIX: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/";
/// At most this many kinds are checked per policy, as Kubernetes bounds it.
const MAX_KINDS: usize = 10;
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The type of a kind's objects, from its published schema.
fn kind_type(info: &ResourceInfo, defs: &Definitions) -> Option<Ty> {
    let schema = match custom::version(info) {
        Some(version) => {
            // Published with the whole ObjectMeta, as the OpenAPI of a custom resource is.
            let mut root = version.schema_json.clone();
            if root.get("properties").is_some_and(Value::is_object) {
                root["properties"]["metadata"] = json!({"$ref": format!("#/definitions/{OBJECT_META}")});
            }
            root
        }
        None => defs(info.ops.definition)?,
    };
    Some(of_schema(info.kind, &schema, defs, true))
}

/// The kinds a policy's resource rules name, sorted by group, version and kind. A rule naming
/// any group or version by wildcard names none; resources by wildcard or with a subresource are
/// left out.
fn kinds(policy: &Value) -> Vec<&'static ResourceInfo> {
    let mut found: BTreeMap<(&str, &str, &str), &'static ResourceInfo> = BTreeMap::new();
    let strings = |v: &Value| -> Vec<String> { v.as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect() };
    for rule in policy["spec"]["matchConstraints"]["resourceRules"].as_array().into_iter().flatten() {
        let (groups, versions) = (strings(&rule["apiGroups"]), strings(&rule["apiVersions"]));
        if groups.iter().chain(&versions).any(|g| g.contains('*')) {
            continue;
        }
        let resources: Vec<String> = strings(&rule["resources"]).into_iter().filter(|r| !r.contains(['*', '/'])).collect();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    if let Some(info) = registry::lookup(group, version, resource) {
                        found.insert((info.group, info.version, info.kind), info);
                    }
                }
            }
        }
    }
    found.into_values().take(MAX_KINDS).collect()
}

/// What every expression of the policy may name, with `object` and `oldObject` of `object`'s
/// type and `params` of its param kind's.
fn declarations(policy: &Value, object: &Ty, defs: &Definitions) -> Vec<(&'static str, Ty)> {
    let spec = &policy["spec"];
    let param_kind = &spec["paramKind"];
    let api_version = param_kind["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let params = param_kind["kind"].as_str().and_then(|kind| registry::lookup_kind(group, version, kind)).and_then(|info| kind_type(info, defs));
    admission::declarations(spec, object, params.unwrap_or(Ty::Dyn), defs)
}

/// The warnings for one policy: per validation expression and message expression, what the
/// check finds against each kind.
pub fn warnings(policy: &Value) -> Vec<Value> {
    let defs = definitions();
    let typed: Vec<(&ResourceInfo, Vec<(&str, Ty)>)> = kinds(policy)
        .into_iter()
        .filter_map(|info| Some((info, declarations(policy, &kind_type(info, &defs)?, &defs))))
        .collect();
    let check_all = |source: &str| -> Option<String> {
        let found: Vec<String> = typed
            .iter()
            .filter_map(|(info, vars)| check(source, vars).err().map(|issues| format!("{}/{}, Kind={}: compilation failed: {issues}\n", info.group, info.version, info.kind)))
            .collect();
        (!found.is_empty()).then(|| found.join("\n"))
    };
    let mut out = Vec::new();
    for (i, validation) in policy["spec"]["validations"].as_array().into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(source) = validation[field].as_str().filter(|s| !s.is_empty()) else { continue };
            if let Some(warning) = check_all(source) {
                out.push(json!({"fieldRef": format!("spec.validations[{i}].{field}"), "warning": warning}));
            }
        }
    }
    out
}

/// Writes the type check of every policy whose status has not seen its generation.
async fn sync(ctx: &Context, client: &Client) -> ApiResult<()> {
    let info = registry::lookup("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies").expect("policies are served");
    let listed = ctx.informers.informer(PREFIX).await.list();
    for item in &listed {
        let policy = machinery::stored::parse(item)?;
        if !stale(&policy) {
            continue;
        }
        let name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, name, Verb::Update) };
        let written = client.update(&req, FieldValidation::Ignore, |current| {
            let mut next = current.clone();
            if !next["status"].is_object() {
                next["status"] = json!({});
            }
            let found = warnings(current);
            next["status"]["typeChecking"] = if found.is_empty() { json!({}) } else { json!({"expressionWarnings": found}) };
            next["status"]["observedGeneration"] = current["metadata"]["generation"].clone();
            Ok(next)
        })
        .await;
        match written {
            Ok(()) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether the policy's status has not seen its generation.
fn stale(policy: &Value) -> bool {
    let generation = policy["metadata"]["generation"].as_i64().unwrap_or(0);
    generation > policy["status"]["observedGeneration"].as_i64().unwrap_or(0)
}

/// The controller, run on the leader ([`crate::controllers::leading`]).
pub struct TypeCheckController {
    /// Acts as `validatingadmissionpolicy-status-controller`.
    pub client: Client,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for TypeCheckController {
    fn name(&self) -> &'static str {
        "validatingadmissionpolicy-status"
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

    fn policy(validations: Value) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE"]}]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
            "validations": validations,
        }})
    }

    #[test]
    fn deployments_are_checked_against_their_schema() {
        let good = policy(json!([{"expression": "object.spec.replicas > 1 && variables.replicas < 10 && request.userInfo.groups.exists(g, g == 'x')",
            "messageExpression": "'got ' + string(object.spec.replicas) + ' in ' + object.metadata.namespace"}]));
        assert_eq!(warnings(&good), Vec::<Value>::new());
        let confused = policy(json!([
            {"expression": "object.spec.replicas > '1'", "messageExpression": "'wants replicas > 1, got ' + object.spec.replicas"},
            {"expression": "object.spec.maxRetries < 10"},
            {"expression": "variables.replicas == 'three'"},
        ]));
        let found = warnings(&confused);
        let refs: Vec<&str> = found.iter().map(|w| w["fieldRef"].as_str().unwrap()).collect();
        assert_eq!(refs, ["spec.validations[0].expression", "spec.validations[0].messageExpression", "spec.validations[1].expression", "spec.validations[2].expression"]);
        let first = found[0]["warning"].as_str().unwrap();
        assert!(first.starts_with("apps/v1, Kind=Deployment: compilation failed: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'"), "{first}");
        assert!(found[1]["warning"].as_str().unwrap().contains("found no matching overload for '_+_' applied to '(string, int)'"));
        assert!(found[2]["warning"].as_str().unwrap().contains("undefined field 'maxRetries'"));
        assert!(found[3]["warning"].as_str().unwrap().contains("'_==_' applied to '(int, string)'"));
    }

    #[test]
    fn wildcards_and_unknown_kinds_are_not_checked() {
        let mut p = policy(json!([{"expression": "object.spec.replicas > '1'"}]));
        p["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"] = json!(["*"]);
        assert!(warnings(&p).is_empty());
        p["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"] = json!(["v1"]);
        p["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = json!(["deployments/status", "widgets"]);
        assert!(warnings(&p).is_empty());
    }

    #[test]
    fn the_status_follows_the_generation() {
        assert!(stale(&json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 1}})));
        assert!(!stale(&json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 2}})));
    }
}

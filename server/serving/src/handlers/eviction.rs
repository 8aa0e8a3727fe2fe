//! Evicting a pod (`POST pods/{name}/eviction` with a policy/v1 Eviction): the pod is deleted
//! unless the PodDisruptionBudget selecting it allows no disruption now (429), as the eviction
//! subresource decides in Kubernetes. A budget whose status has not caught up with its spec
//! refuses too, as Kubernetes' does until its disruption controller has seen it.

use http::StatusCode;
use serde_json::{json, Value};

use super::reply::Reply;
use machinery::delete_options::DeleteOptions;
use super::write::{self, parse, Update};
use machinery::prepare::FieldValidation;
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult};
use machinery::registry;
use access::request::{ResourceRequest, Verb};
use machinery::selector::label_selector_matches;

fn too_many(message: &str) -> ApiError {
    ApiError::Passed { code: 429, reason: "TooManyRequests".into(), message: message.into() }
}

const VIOLATES: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

pub async fn create(ctx: &Ctx, req: &ResourceRequest, eviction: Value, dry_run: bool) -> ApiResult<Reply> {
    let namespace = req.namespace.clone().unwrap_or_default();
    let name = req.name().to_string();
    let pods = req.info;
    let pod_req = |verb| ResourceRequest { info: pods, namespace: req.namespace.clone(), name: Some(name.clone()), subresource: None, verb, user: req.user.clone() };
    let pod = ctx.store.cache().get(&pod_req(Verb::Get).key(), None)?.ok_or_else(|| req.not_found())?;
    let pod = parse(&pod)?;
    let finished = matches!(pod["status"]["phase"].as_str(), Some("Succeeded") | Some("Failed"));
    let budgets = registry::lookup("policy", "v1", "poddisruptionbudgets").ok_or_else(|| ApiError::internal("poddisruptionbudgets are not served"))?;
    let listed = ctx.store.cache().list(&budgets.list_prefix(Some(&namespace)), None, None, None, &|_| true)?;
    let mut matching = Vec::new();
    for item in listed.items {
        let pdb = parse(&item)?;
        if label_selector_matches(&pdb["spec"]["selector"], pod["metadata"]["labels"].as_object()) {
            matching.push(pdb);
        }
    }
    if !finished {
        match matching.as_slice() {
            [] => {}
            [pdb] => {
                let observed = pdb["status"]["observedGeneration"].as_i64().unwrap_or(0);
                if observed < pdb["metadata"]["generation"].as_i64().unwrap_or(1) {
                    return Err(too_many(VIOLATES));
                }
                if pdb["status"]["disruptionsAllowed"].as_i64().unwrap_or(0) <= 0 {
                    return Err(too_many(VIOLATES));
                }
                // The budget counts this disruption before the pod goes.
                let pdb_name = pdb["metadata"]["name"].as_str().unwrap_or_default().to_string();
                let pdb_req = ResourceRequest { info: budgets, namespace: req.namespace.clone(), name: Some(pdb_name), subresource: Some("status".into()), verb: Verb::Update, user: req.user.clone() };
                let opts = Update { precondition: None, validation: FieldValidation::Ignore, duplicates: Vec::new(), dry_run, manager: None };
                write::update(ctx, &pdb_req, opts, &mut Vec::new(), |old| {
                    let allowed = old["status"]["disruptionsAllowed"].as_i64().unwrap_or(0);
                    if allowed <= 0 {
                        return Err(too_many(VIOLATES));
                    }
                    let mut new = old.clone();
                    new["status"]["disruptionsAllowed"] = json!(allowed - 1);
                    new["status"]["disruptedPods"][&name] = json!(machinery::meta::now());
                    Ok(new)
                })
                .await?;
            }
            _ => return Err(ApiError::internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")),
        }
    }
    let preconditions = &eviction["deleteOptions"]["preconditions"];
    let opts = DeleteOptions {
        uid: preconditions["uid"].as_str().map(String::from),
        resource_version: preconditions["resourceVersion"].as_str().and_then(|r| r.parse().ok()),
        dry_run,
        propagation: None,
        grace_period: eviction["deleteOptions"]["gracePeriodSeconds"].as_i64(),
        ..Default::default()
    };
    write::delete(ctx, &pod_req(Verb::Delete), &opts).await?;
    Ok(Reply::Document {
        code: StatusCode::CREATED,
        value: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    })
}

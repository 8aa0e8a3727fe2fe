//! AlwaysPullImages: every container of a new pod, and of an updated pod that brings a new
//! image, pulls its image every time it starts (`imagePullPolicy: Always`, image volumes'
//! `pullPolicy` too), so that a node's cached copy of a private image is not used by a pod
//! without the credentials to pull it. The validating phase refuses a pod a later plugin set
//! otherwise.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::{Mutating, Operation, Request, Validating};
use machinery::error::ApiResult;

const CONTAINER_LISTS: &[&str] = &["initContainers", "containers", "ephemeralContainers"];

pub struct AlwaysPullImages;

/// Whether the write concerns the plugin: a pod's create, or an update with an image the pod
/// did not have.
fn applies(r: &Request<'_>, pod: &Value) -> bool {
    if !r.concerns("", "pods") {
        return false;
    }
    match (r.operation, r.old) {
        (Operation::Create, _) => true,
        (Operation::Update, Some(old)) => {
            let before: HashSet<&str> = images(old).collect();
            images(pod).any(|image| !before.contains(image))
        }
        _ => false,
    }
}

fn images(pod: &Value) -> impl Iterator<Item = &str> {
    CONTAINER_LISTS.iter().flat_map(move |list| pod["spec"][*list].as_array().into_iter().flatten()).filter_map(|c| c["image"].as_str())
}

#[async_trait::async_trait]
impl Mutating for AlwaysPullImages {
    fn name(&self) -> &'static str {
        "AlwaysPullImages"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !applies(r, pod) {
            return Ok(());
        }
        for list in CONTAINER_LISTS {
            for c in pod["spec"].get_mut(*list).and_then(Value::as_array_mut).into_iter().flatten() {
                c["imagePullPolicy"] = json!("Always");
            }
        }
        for v in pod["spec"].get_mut("volumes").and_then(Value::as_array_mut).into_iter().flatten() {
            if v["image"].is_object() {
                v["image"]["pullPolicy"] = json!("Always");
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Validating for AlwaysPullImages {
    fn name(&self) -> &'static str {
        "AlwaysPullImages"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(pod) = r.object.filter(|p| applies(r, p)) else { return Ok(()) };
        let unsupported = |path: String, value: &Value| format!("{path}: Unsupported value: {}: supported values: \"Always\"", json!(value.as_str().unwrap_or_default()));
        let mut problems = Vec::new();
        for list in CONTAINER_LISTS {
            for (i, c) in pod["spec"][*list].as_array().into_iter().flatten().enumerate() {
                if c["imagePullPolicy"] != "Always" {
                    problems.push(unsupported(format!("spec.{list}[{i}].imagePullPolicy"), &c["imagePullPolicy"]));
                }
            }
        }
        for (i, v) in pod["spec"]["volumes"].as_array().into_iter().flatten().enumerate() {
            if v["image"].is_object() && v["image"]["pullPolicy"] != "Always" {
                problems.push(unsupported(format!("spec.volumes[{i}].image.pullPolicy"), &v["image"]["pullPolicy"]));
            }
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(r.forbidden(problems.join(", "))),
        }
    }
}

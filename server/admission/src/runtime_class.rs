//! RuntimeClass: a new pod naming a RuntimeClass must name one that exists; it gets the class's
//! pod overhead (refused if it gives another) and the class's scheduling constraints (node
//! selector terms merged, a conflicting one refused; tolerations added), and a pod with an
//! overhead its class does not define is refused.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::kept::Kept;
use crate::resource_list;
use crate::{Mutating, Operation, Request, Validating};
use machinery::error::ApiResult;

pub struct RuntimeClass {
    pub classes: Arc<Kept>,
}

impl RuntimeClass {
    /// The pod's class, when it names one; a refusal when that one does not exist.
    fn class_of(&self, r: &Request<'_>, pod: &Value) -> ApiResult<Option<Arc<Value>>> {
        let Some(name) = pod["spec"]["runtimeClassName"].as_str() else { return Ok(None) };
        self.classes.get(name).map(Some).ok_or_else(|| r.forbidden(format!("pod rejected: RuntimeClass {name:?} not found")))
    }

    fn applies(r: &Request<'_>) -> bool {
        r.operation == Operation::Create && r.concerns("", "pods")
    }
}

#[async_trait::async_trait]
impl Mutating for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !Self::applies(r) {
            return Ok(());
        }
        let Some(class) = self.class_of(r, pod)? else { return Ok(()) };
        let fixed = &class["overhead"]["podFixed"];
        if fixed.is_object() {
            if has_overhead(pod) && !same_quantities(&pod["spec"]["overhead"], fixed) {
                return Err(r.forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"));
            }
            pod["spec"]["overhead"] = fixed.clone();
        }
        let scheduling = &class["scheduling"];
        if let Some(selector) = scheduling["nodeSelector"].as_object() {
            let mut merged = pod["spec"]["nodeSelector"].as_object().cloned().unwrap_or_default();
            for (key, value) in selector {
                if let Some(own) = merged.get(key).filter(|own| *own != value) {
                    let (value, own) = (value.as_str().unwrap_or_default(), own.as_str().unwrap_or_default());
                    return Err(r.forbidden(format!("conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; pod.spec.nodeSelector[{key}] = {own}")));
                }
                merged.insert(key.clone(), value.clone());
            }
            pod["spec"]["nodeSelector"] = Value::Object(merged);
        }
        for toleration in scheduling["tolerations"].as_array().into_iter().flatten() {
            let list = pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
            if !list.iter().any(|t| covers(t, toleration)) {
                let mut kept: Vec<Value> = list.into_iter().filter(|t| !covers(toleration, t)).collect();
                kept.push(toleration.clone());
                pod["spec"]["tolerations"] = json!(kept);
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Validating for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(pod) = r.object.filter(|_| Self::applies(r)) else { return Ok(()) };
        let class = self.class_of(r, pod)?;
        match class.as_ref().map(|c| &c["overhead"]["podFixed"]).filter(|f| f.is_object()) {
            Some(fixed) if !same_quantities(&pod["spec"]["overhead"], fixed) => Err(r.forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")),
            None if has_overhead(pod) => Err(r.forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")),
            _ => Ok(()),
        }
    }
}

fn has_overhead(pod: &Value) -> bool {
    pod["spec"]["overhead"].as_object().is_some_and(|o| !o.is_empty())
}

/// Two resource lists with the same resources in equal amounts (`1` is `1000m`).
fn same_quantities(a: &Value, b: &Value) -> bool {
    resource_list::equal(&resource_list::read(a), &resource_list::read(b))
}

/// Whether toleration `a` tolerates everything `b` does (Kubernetes' superset rule: the same
/// key, or any key with `Exists` and no key; the same effect or any; the same value when
/// `Equal`; no shorter a time limit).
fn covers(a: &Value, b: &Value) -> bool {
    let s = |t: &Value, f: &str| t[f].as_str().unwrap_or_default().to_string();
    if a == b {
        return true;
    }
    let key_ok = s(a, "key").is_empty() && s(a, "operator") == "Exists" || s(a, "key") == s(b, "key");
    let effect_ok = s(a, "effect").is_empty() || s(a, "effect") == s(b, "effect");
    let value_ok = s(a, "operator") == "Exists" || (s(b, "operator") != "Exists" && s(a, "value") == s(b, "value"));
    let seconds_ok = match (a["tolerationSeconds"].as_i64(), b["tolerationSeconds"].as_i64()) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(x), Some(y)) => x >= y,
    };
    key_ok && effect_ok && value_ok && seconds_ok
}

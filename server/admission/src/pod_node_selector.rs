//! PodNodeSelector: a new pod gets its namespace's node selector (the namespace annotation
//! `scheduler.alpha.kubernetes.io/node-selector`, else the configured
//! `clusterDefaultNodeSelector`) merged into its own, a pod whose selector conflicts with it is
//! refused, and so is one whose selector is not within the namespace's whitelist of the
//! configuration. Creates of pods only: updates and subresources are not looked at.
//!
//! The configuration is kube-apiserver's unversioned one (`podNodeSelectorPluginConfig`: a map
//! of `clusterDefaultNodeSelector` and namespace names to selectors `key=value,...`), inline in
//! the `AdmissionConfiguration`, in a file it names, or the legacy file of that form given as
//! `--admission-control-config-file` itself.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::namespaces::Namespaces;
use crate::{Mutating, Operation, Replicated, Request, Validating};
use machinery::error::{ApiError, ApiResult, Cause};

pub const ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";
const CLUSTER_DEFAULT: &str = "clusterDefaultNodeSelector";
const CONFIG: &str = "podNodeSelectorPluginConfig";

type Labels = BTreeMap<String, String>;

pub struct PodNodeSelector {
    namespaces: Arc<Namespaces>,
    store: raft_store::Store,
    /// `clusterDefaultNodeSelector` and each namespace's whitelist, as configured.
    selectors: HashMap<String, String>,
}

impl PodNodeSelector {
    /// The plugin with its configuration. As kube-apiserver reads it, the map is found whatever
    /// the case of its name (Go's JSON field matching), entries that are not strings are left
    /// out, and a configuration of another shape is none at all.
    pub fn new(replicated: &Replicated, config: Option<&Value>) -> PodNodeSelector {
        let fields = config.and_then(Value::as_object);
        let map = fields.and_then(|f| f.get(CONFIG).or_else(|| f.iter().find(|(k, _)| k.eq_ignore_ascii_case(CONFIG)).map(|(_, v)| v)));
        let selectors = map.and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
        PodNodeSelector { namespaces: replicated.namespaces.clone(), store: replicated.store.clone(), selectors }
    }

    /// The node selector of the request's namespace: its annotation (an empty one too), else
    /// the cluster's default.
    async fn namespace_selector(&self, r: &Request<'_>) -> ApiResult<Labels> {
        let name = r.req.namespace.as_deref().unwrap_or_default();
        let namespace = self.namespaces.lookup(&self.store, name).await?;
        let namespace = namespace.ok_or_else(|| ApiError::internal(format!("Internal error occurred: namespace {name} does not exist")))?;
        match namespace["metadata"]["annotations"][ANNOTATION].as_str() {
            Some(selector) => labels(selector),
            None => labels(self.selectors.get(CLUSTER_DEFAULT).map_or("", String::as_str)),
        }
    }

    /// The pod's selector agrees with its namespace's and is within the namespace's whitelist.
    fn check(&self, r: &Request<'_>, pod: &Value, namespace: &Labels) -> ApiResult<()> {
        let own = node_selector(pod);
        if conflicts(namespace, &own) {
            return Err(r.forbidden("pod node label selector conflicts with its namespace node label selector"));
        }
        let name = r.req.namespace.as_deref().unwrap_or_default();
        let whitelist = labels(self.selectors.get(name).map_or("", String::as_str))?;
        if !whitelist.is_empty() && own.iter().any(|(k, v)| whitelist.get(k) != Some(v)) {
            return Err(r.forbidden("pod node label selector labels conflict with its namespace whitelist"));
        }
        Ok(())
    }
}

fn applies(r: &Request<'_>) -> bool {
    r.operation == Operation::Create && r.concerns("", "pods")
}

fn node_selector(pod: &Value) -> Labels {
    pod["spec"]["nodeSelector"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
}

/// Whether the two give one key different values.
fn conflicts(a: &Labels, b: &Labels) -> bool {
    a.iter().any(|(k, v)| b.get(k).is_some_and(|w| w != v))
}

/// A selector `key=value,...` read as Kubernetes' `ConvertSelectorToLabelsMap` reads it. Its
/// errors are plain ones, which the client gets as a 500 without a reason.
fn labels(selector: &str) -> ApiResult<Labels> {
    let mut out = Labels::new();
    if selector.is_empty() {
        return Ok(out);
    }
    for label in selector.split(',') {
        let parts: Vec<&str> = label.split('=').collect();
        let [key, value] = parts[..] else { return Err(ApiError::plain(format!("invalid selector: [{}]", parts.join(" ")))) };
        let (key, value) = (key.trim(), value.trim());
        invalid("<nil>", key, |causes| machinery::meta::validate_qualified_name(key, "", causes))?;
        invalid(&format!("[{key}]"), value, |causes| machinery::meta::validate_label_value(value, "", causes))?;
        out.insert(key.to_string(), value.to_string());
    }
    Ok(out)
}

/// The problems `check` finds with `value`, as one Go field error at `field`.
fn invalid(field: &str, value: &str, check: impl FnOnce(&mut Vec<Cause>)) -> ApiResult<()> {
    let mut causes = Vec::new();
    check(&mut causes);
    if causes.is_empty() {
        return Ok(());
    }
    let said = format!("Invalid value: \"{value}\": ");
    let details: Vec<&str> = causes.iter().map(|c| c.message.strip_prefix(&said).unwrap_or(&c.message)).collect();
    Err(ApiError::plain(format!("{field}: {said}{}", details.join("; "))))
}

#[async_trait::async_trait]
impl Mutating for PodNodeSelector {
    fn name(&self) -> &'static str {
        "PodNodeSelector"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !applies(r) {
            return Ok(());
        }
        let namespace = self.namespace_selector(r).await?;
        // The pod's own value wins; a conflicting one is then refused.
        for (k, v) in &namespace {
            if pod["spec"]["nodeSelector"].get(k).is_none() {
                pod["spec"]["nodeSelector"][k] = json!(v);
            }
        }
        self.check(r, pod, &namespace)
    }
}

#[async_trait::async_trait]
impl Validating for PodNodeSelector {
    fn name(&self) -> &'static str {
        "PodNodeSelector"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(pod) = r.object.filter(|_| applies(r)) else { return Ok(()) };
        let namespace = self.namespace_selector(r).await?;
        self.check(r, pod, &namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: ApiError) -> String {
        e.to_string()
    }

    #[test]
    fn selectors_as_kubernetes_reads_them() {
        assert_eq!(labels(" env = prod ,zone=a").unwrap(), Labels::from([("env".into(), "prod".into()), ("zone".into(), "a".into())]));
        assert!(labels("").unwrap().is_empty());
        assert_eq!(message(labels("env").unwrap_err()), "invalid selector: [env]");
        assert_eq!(message(labels("a=b,").unwrap_err()), "invalid selector: []");
        assert_eq!(message(labels("env==prod").unwrap_err()), "invalid selector: [env  prod]");
        assert!(message(labels("-bad=x").unwrap_err()).starts_with("<nil>: Invalid value: \"-bad\": name part must consist of"));
        assert!(message(labels("env=-x").unwrap_err()).starts_with("[env]: Invalid value: \"-x\": a valid label must be"));
    }

    #[test]
    fn conflicts_are_different_values_of_one_key() {
        let a = labels("env=prod,zone=a").unwrap();
        assert!(conflicts(&a, &labels("env=dev").unwrap()));
        assert!(!conflicts(&a, &labels("env=prod,disk=ssd").unwrap()));
    }
}

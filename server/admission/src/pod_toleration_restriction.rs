//! PodTolerationRestriction: a new pod gets its namespace's default tolerations (the namespace
//! annotation `scheduler.alpha.kubernetes.io/defaultTolerations`, a JSON list, else the
//! configured `default`), a pod that is not BestEffort tolerates the `memory-pressure`
//! NoSchedule taint (on updates too), merged with its own tolerations; then every toleration of
//! a created or updated pod must be covered by the namespace's whitelist
//! (`scheduler.alpha.kubernetes.io/tolerationsWhitelist`, else the configured `whitelist`).
//! Subresources are not looked at.
//!
//! The configuration is a `Configuration` of `podtolerationrestriction.admission.k8s.io/v1alpha1`;
//! one that is not, or has invalid tolerations, stops the server at start.

use std::sync::Arc;

use serde_json::Value;

use crate::namespaces::Namespaces;
use crate::tolerations::{self, Toleration};
use crate::{Mutating, Operation, Replicated, Request, Validating};
use machinery::error::{ApiError, ApiResult};
use machinery::registry::kinds::core::pod::qos_class;
use machinery::registry::kinds::node::runtimeclass;

pub const DEFAULTS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
pub const WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";
const API_VERSION: &str = "podtolerationrestriction.admission.k8s.io/v1alpha1";

pub struct PodTolerationRestriction {
    namespaces: Arc<Namespaces>,
    store: raft_store::Store,
    /// The cluster's default tolerations and whitelist.
    defaults: Vec<Toleration>,
    whitelist: Vec<Toleration>,
}

impl PodTolerationRestriction {
    /// The plugin with its configuration, or why the configuration is refused.
    pub fn new(replicated: &Replicated, config: Option<&Value>) -> Result<PodTolerationRestriction, String> {
        let (defaults, whitelist) = match config {
            Some(config) => configured(config)?,
            None => Default::default(),
        };
        Ok(PodTolerationRestriction { namespaces: replicated.namespaces.clone(), store: replicated.store.clone(), defaults, whitelist })
    }

    /// The request's namespace, looked up again once caught up when this replica has not seen it.
    async fn namespace(&self, r: &Request<'_>) -> ApiResult<Arc<Value>> {
        let name = r.req.namespace.as_deref().unwrap_or_default();
        let namespace = self.namespaces.lookup(&self.store, name).await?;
        namespace.ok_or_else(|| ApiError::NotFound { group: String::new(), resource: "namespaces".into(), name: name.into() })
    }

    /// Every toleration of the pod is within the namespace's whitelist, else the cluster's.
    async fn check(&self, r: &Request<'_>, pod: &Value) -> ApiResult<()> {
        let own = tolerations::of_spec(&pod["spec"]);
        if own.is_empty() {
            return Ok(());
        }
        let (whitelist, scope) = match annotated(&*self.namespace(r).await?, WHITELIST)? {
            Some(whitelist) => (whitelist, "namespace"),
            None => (self.whitelist.clone(), "cluster"),
        };
        if tolerations::whitelisted(&own, &whitelist) {
            return Ok(());
        }
        Err(ApiError::plain(format!("pod tolerations (possibly merged with namespace default tolerations) conflict with its {scope} whitelist")))
    }
}

/// The configured `default` and `whitelist`.
fn configured(config: &Value) -> Result<(Vec<Toleration>, Vec<Toleration>), String> {
    let (api_version, kind) = (config["apiVersion"].as_str().unwrap_or_default(), config["kind"].as_str().unwrap_or_default());
    if (api_version, kind) != (API_VERSION, "Configuration") {
        return Err(format!("PodTolerationRestriction: the configuration is not a Configuration of {API_VERSION} (kind {kind:?}, apiVersion {api_version:?})"));
    }
    let mut causes = Vec::new();
    let mut list = |field: &str| {
        for (i, t) in config[field].as_array().into_iter().flatten().enumerate() {
            runtimeclass::toleration(t, &format!("podtolerationrestriction.{field}[{i}]"), &mut causes);
        }
        tolerations::parse(&config[field]).map_err(|e| format!("PodTolerationRestriction: {e}"))
    };
    let (defaults, whitelist) = (list("default")?, list("whitelist")?);
    if !causes.is_empty() {
        let errors: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        return Err(format!("PodTolerationRestriction: invalid config: [{}]", errors.join(" ")));
    }
    Ok((defaults, whitelist))
}

/// The tolerations a namespace annotation lists: none when it is absent, an empty list when it
/// is empty; a value that is not a list of tolerations is a plain error (a 500 without a reason).
fn annotated(namespace: &Value, key: &str) -> ApiResult<Option<Vec<Toleration>>> {
    let Some(text) = namespace["metadata"]["annotations"][key].as_str() else { return Ok(None) };
    if text.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let list = serde_json::from_str(text).map_err(|e| e.to_string()).and_then(|v| tolerations::parse(&v));
    list.map(Some).map_err(ApiError::plain)
}

fn applies(r: &Request<'_>) -> bool {
    matches!(r.operation, Operation::Create | Operation::Update) && r.concerns("", "pods")
}

/// Whether the pod is BestEffort as Kubernetes' `GetPodQOS` finds it: an updated pod by the class
/// it records; a new pod from its resources (the server records its class after admission).
fn best_effort(r: &Request<'_>, pod: &Value) -> bool {
    let recorded = pod["status"]["qosClass"].as_str().filter(|c| !c.is_empty() && r.operation == Operation::Update);
    recorded.unwrap_or_else(|| qos_class(&pod["spec"])) == "BestEffort"
}

#[async_trait::async_trait]
impl Mutating for PodTolerationRestriction {
    fn name(&self) -> &'static str {
        "PodTolerationRestriction"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !applies(r) {
            return Ok(());
        }
        let mut extra = match r.operation {
            Operation::Create => annotated(&*self.namespace(r).await?, DEFAULTS)?.unwrap_or_else(|| self.defaults.clone()),
            _ => Vec::new(),
        };
        if !best_effort(r, pod) {
            extra.push(Toleration { key: "node.kubernetes.io/memory-pressure".into(), operator: "Exists".into(), effect: "NoSchedule".into(), ..Toleration::default() });
        }
        if !extra.is_empty() {
            let merged = tolerations::merge(&tolerations::of_spec(&pod["spec"]), &extra);
            pod["spec"]["tolerations"] = merged.iter().map(Toleration::to_json).collect();
        }
        self.check(r, pod).await
    }
}

#[async_trait::async_trait]
impl Validating for PodTolerationRestriction {
    fn name(&self) -> &'static str {
        "PodTolerationRestriction"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(pod) = r.object.filter(|_| applies(r)) else { return Ok(()) };
        self.check(r, pod).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configuration() {
        let config = json!({"apiVersion": API_VERSION, "kind": "Configuration",
            "default": [{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}], "whitelist": [{"key": "team", "operator": "Exists"}]});
        let (defaults, whitelist) = configured(&config).unwrap();
        assert_eq!((defaults[0].value.as_str(), whitelist[0].operator.as_str()), ("a", "Exists"));
        let untyped = configured(&json!({"default": []})).unwrap_err();
        assert_eq!(untyped, format!("PodTolerationRestriction: the configuration is not a Configuration of {API_VERSION} (kind \"\", apiVersion \"\")"));
        let invalid = configured(&json!({"apiVersion": API_VERSION, "kind": "Configuration", "whitelist": [{"key": "k", "operator": "Exists", "value": "v"}]})).unwrap_err();
        assert_eq!(invalid, "PodTolerationRestriction: invalid config: [podtolerationrestriction.whitelist[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists']");
    }

    #[test]
    fn annotations() {
        let ns = json!({"metadata": {"annotations": {DEFAULTS: "", WHITELIST: "[{\"key\": \"a\", \"operator\": \"Exists\"}]", "x": "{}"}}});
        assert_eq!(annotated(&ns, DEFAULTS).unwrap(), Some(Vec::new()));
        assert_eq!(annotated(&ns, WHITELIST).unwrap().unwrap()[0].key, "a");
        assert_eq!(annotated(&json!({}), WHITELIST).unwrap(), None);
        assert_eq!(annotated(&ns, "x").unwrap_err().to_string(), "json: cannot unmarshal object into Go value of type []v1.Toleration");
    }
}

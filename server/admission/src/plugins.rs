//! The admission plugins by the names kube-apiserver's flags give them: the order they run in
//! whichever order they are named, the ones on by default, `--enable-admission-plugins` and
//! `--disable-admission-plugins` resolved against them, and the per-plugin configuration of
//! `--admission-control-config-file` (an `AdmissionConfiguration`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::{Mutating, Validating};

/// Every plugin kube-apiserver 1.36 knows, in the order they run (mutating plugins in this
/// order, then validating plugins in this order); webhooks, quota and the deny plugin last.
pub const ORDER: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PodGroupProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "PodGroupWorkloadExists",
    "NodeDeclaredFeatureValidator",
    "JobValidation",
    "PodResizeValidator",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins on unless `--disable-admission-plugins` names them (some act only when their
/// feature gate is on).
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "PodGroupProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
    "PodGroupWorkloadExists",
    "NodeDeclaredFeatureValidator",
    "JobValidation",
    "PodResizeValidator",
];

/// The plugins that run, in [`ORDER`]: the defaults and `enable`, less `disable`.
pub fn resolve(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>, String> {
    for (flag, names) in [("enable-admission-plugins", enable), ("disable-admission-plugins", disable)] {
        if let Some(unknown) = names.iter().find(|n| !ORDER.contains(&n.as_str())) {
            return Err(format!("{flag} plugin {unknown:?} is unknown"));
        }
    }
    if let Some(both) = enable.iter().find(|n| disable.contains(n)) {
        return Err(format!("{both:?} found in both --enable-admission-plugins and --disable-admission-plugins"));
    }
    let on = |name: &&str| (DEFAULT_ON.contains(name) || enable.iter().any(|e| e == name)) && !disable.iter().any(|d| d == name);
    Ok(ORDER.iter().copied().filter(on).collect())
}

/// One plugin's parts: what it changes and what it refuses (a plugin may do both, as
/// LimitRanger defaults resources and then enforces its limits).
#[derive(Default)]
pub struct Plugin {
    pub mutating: Option<Arc<dyn Mutating>>,
    pub validating: Option<Arc<dyn Validating>>,
}

impl Plugin {
    pub fn mutating(m: Arc<dyn Mutating>) -> Plugin {
        Plugin { mutating: Some(m), validating: None }
    }

    pub fn validating(v: Arc<dyn Validating>) -> Plugin {
        Plugin { mutating: None, validating: Some(v) }
    }

    /// A plugin with both phases.
    pub fn both<P: Mutating + Validating + 'static>(p: Arc<P>) -> Plugin {
        Plugin { mutating: Some(p.clone()), validating: Some(p) }
    }
}

/// The plugins' configurations from `--admission-control-config-file`, by plugin name.
#[derive(Debug, Default, Clone)]
pub struct Configurations {
    by_name: HashMap<String, Value>,
}

impl Configurations {
    /// Reads an `AdmissionConfiguration` (YAML or JSON): each plugin's `configuration`, or the
    /// file its `path` names (relative to the configuration's directory). As kube-apiserver
    /// does, a file of another kind with a top-level `podNodeSelectorPluginConfig` or
    /// `imagePolicy` is the legacy form: the whole file is the configuration of PodNodeSelector
    /// and ImagePolicyWebhook.
    pub fn load(path: &Path) -> Result<Configurations, String> {
        let config = read(path)?;
        let kind = config["kind"].as_str().unwrap_or_default();
        let api_version = config["apiVersion"].as_str().unwrap_or_default();
        const VERSIONS: &[&str] = &["apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1", "apiserver.k8s.io/v1alpha1"];
        let admission = kind == "AdmissionConfiguration" && VERSIONS.contains(&api_version);
        if !admission && ["podNodeSelectorPluginConfig", "imagePolicy"].iter().any(|k| config.get(k).is_some()) {
            let by_name = ["PodNodeSelector", "ImagePolicyWebhook"].map(|name| (name.to_string(), config.clone())).into();
            return Ok(Configurations { by_name });
        }
        if !admission {
            return Err(format!("{}: not an AdmissionConfiguration of {} (kind {kind:?}, apiVersion {api_version:?})", path.display(), VERSIONS.join(", ")));
        }
        let mut by_name = HashMap::new();
        for plugin in config["plugins"].as_array().into_iter().flatten() {
            let name = plugin["name"].as_str().ok_or_else(|| format!("{}: a plugin without a name", path.display()))?;
            if !ORDER.contains(&name) {
                return Err(format!("{}: admission plugin {name:?} is unknown", path.display()));
            }
            let value = match (&plugin["configuration"], plugin["path"].as_str()) {
                (Value::Null, Some(file)) => read(&path.parent().unwrap_or(Path::new(".")).join(file))?,
                (Value::Null, None) => continue,
                (inline, _) => inline.clone(),
            };
            by_name.insert(name.to_string(), value);
        }
        Ok(Configurations { by_name })
    }

    /// The configuration given for the plugin `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name)
    }
}

fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_in_order_with_enabled_and_disabled() {
        let on = resolve(&names(&["NodeRestriction"]), &names(&["PodSecurity"])).unwrap();
        assert_eq!(on.first(), Some(&"NamespaceLifecycle"));
        assert!(on.contains(&"NodeRestriction") && !on.contains(&"PodSecurity") && !on.contains(&"AlwaysDeny"));
        let position = |n| on.iter().position(|p| *p == n).unwrap();
        assert!(position("ServiceAccount") < position("NodeRestriction"));
        assert_eq!(on.last(), Some(&"ResourceQuota"));
    }

    #[test]
    fn unknown_and_contradictory_names_are_refused() {
        assert_eq!(resolve(&names(&["Nope"]), &[]).unwrap_err(), "enable-admission-plugins plugin \"Nope\" is unknown");
        assert!(resolve(&names(&["LimitRanger"]), &names(&["LimitRanger"])).unwrap_err().contains("found in both"));
    }

    #[test]
    fn configuration_inline_and_by_path() {
        let dir = std::env::temp_dir().join(format!("admission-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("quota.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: []\n").unwrap();
        let file = dir.join("admission.yaml");
        std::fs::write(&file, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    defaults:\n      enforce: baseline\n- name: ResourceQuota\n  path: quota.yaml\n").unwrap();
        let configs = Configurations::load(&file).unwrap();
        assert_eq!(configs.get("PodSecurity").unwrap()["defaults"]["enforce"], "baseline");
        assert_eq!(configs.get("ResourceQuota").unwrap()["kind"], "ResourceQuotaConfiguration");
        assert!(configs.get("LimitRanger").is_none());
        std::fs::write(&file, "apiVersion: v1\nkind: ConfigMap\n").unwrap();
        assert!(Configurations::load(&file).is_err());
        std::fs::write(&file, "podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=prod\n").unwrap();
        let legacy = Configurations::load(&file).unwrap();
        assert_eq!(legacy.get("PodNodeSelector").unwrap()["podNodeSelectorPluginConfig"]["clusterDefaultNodeSelector"], "env=prod");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

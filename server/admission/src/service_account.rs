//! ServiceAccount, a mutating admission step for new pods, as kube-apiserver has it: a pod runs
//! as `default` unless it names an account; the account must exist (refused otherwise, with
//! Kubernetes' message); unless automounting is turned off on the pod or the account, the pod
//! gets the projected `kube-api-access-*` volume (a token, the root CA, the namespace) mounted
//! read-only at `/var/run/secrets/kubernetes.io/serviceaccount` in every container; and it
//! inherits the account's image pull secrets when it has none.

use std::time::Duration;

use rand::Rng;
use raft_store::Store;
use serde_json::{json, Value};

use super::{Mutating, Operation, Request};
use access::serviceaccount::{DEFAULT_ACCOUNT, ROOT_CA_CONFIGMAP};
use machinery::error::{ApiError, ApiResult};
use machinery::registry;

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The life of the token a kubelet requests for the volume.
const TOKEN_EXPIRATION: i64 = 3607;
/// How long a pod waits for the `default` account a new namespace is about to get.
const DEFAULT_ACCOUNT_WAIT: Duration = Duration::from_secs(2);

pub struct ServiceAccounts {
    pub store: Store,
}

impl ServiceAccounts {
    fn account(&self, namespace: &str, name: &str) -> ApiResult<Option<Value>> {
        let info = registry::lookup("", "v1", "serviceaccounts").ok_or_else(|| ApiError::internal("serviceaccounts are not served"))?;
        self.store.cache().get(&info.key(Some(namespace), name), None)?.map(|o| serde_json::from_slice(&o.data).map_err(ApiError::internal)).transpose()
    }

    /// The account, waiting briefly for `default` (its controller may not have made it yet)
    /// and once for this replica to catch up with the leader.
    async fn find(&self, namespace: &str, name: &str) -> ApiResult<Option<Value>> {
        if let Some(found) = self.account(namespace, name)? {
            return Ok(Some(found));
        }
        let _ = tokio::time::timeout(DEFAULT_ACCOUNT_WAIT, self.store.linearizable_rev()).await;
        if name != DEFAULT_ACCOUNT {
            return self.account(namespace, name);
        }
        let deadline = tokio::time::Instant::now() + DEFAULT_ACCOUNT_WAIT;
        loop {
            if let Some(found) = self.account(namespace, name)? {
                return Ok(Some(found));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Whether the pod gets a token volume: the pod's choice, else the account's, else yes.
fn automount(pod: &Value, account: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"].as_bool().or(account["automountServiceAccountToken"].as_bool()).unwrap_or(true)
}

/// Adds the projected token volume and its mounts.
fn mount_token(pod: &mut Value) {
    let spec = &mut pod["spec"];
    let mounted = |c: &Value| c["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| m["mountPath"] == MOUNT_PATH));
    let containers = ["initContainers", "containers"];
    if containers.iter().flat_map(|k| spec[*k].as_array().into_iter().flatten()).all(mounted) {
        return;
    }
    let suffix: String = {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut rng = rand::rng();
        (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
    };
    let name = format!("{VOLUME_PREFIX}{suffix}");
    let volume = json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": 420,
        },
    });
    match spec["volumes"].as_array_mut() {
        Some(volumes) => volumes.push(volume),
        None => spec["volumes"] = json!([volume]),
    }
    for key in containers {
        for c in spec.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            if mounted(c) {
                continue;
            }
            let mount = json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH});
            match c["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount),
                None => c["volumeMounts"] = json!([mount]),
            }
        }
    }
}

#[async_trait::async_trait]
impl Mutating for ServiceAccounts {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        let info = r.req.info;
        if !info.group.is_empty() || info.resource != "pods" || r.req.subresource.is_some() || r.operation != Operation::Create {
            return Ok(());
        }
        if pod["metadata"]["annotations"][MIRROR_ANNOTATION].is_string() {
            return Ok(());
        }
        let spec = &pod["spec"];
        let name = [&spec["serviceAccountName"], &spec["serviceAccount"]]
            .into_iter()
            .find_map(|v| v.as_str().filter(|s| !s.is_empty()))
            .unwrap_or(DEFAULT_ACCOUNT)
            .to_string();
        pod["spec"]["serviceAccountName"] = json!(name);
        pod["spec"]["serviceAccount"] = json!(name);
        let namespace = r.req.namespace.clone().unwrap_or_default();
        let Some(account) = self.find(&namespace, &name).await? else {
            let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
            return Err(ApiError::forbidden(
                "",
                "pods",
                &pod_name,
                format!("error looking up service account {namespace}/{name}: serviceaccount \"{name}\" not found"),
            ));
        };
        if automount(pod, &account) {
            mount_token(pod);
        }
        let pulls = account["imagePullSecrets"].as_array().filter(|p| !p.is_empty());
        if let Some(pulls) = pulls {
            if pod["spec"]["imagePullSecrets"].as_array().is_none_or(Vec::is_empty) {
                pod["spec"]["imagePullSecrets"] = json!(pulls.iter().map(|p| json!({"name": p["name"]})).collect::<Vec<_>>());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_projected_volume() {
        let mut alone = json!({"spec": {"containers": [{"name": "a"}]}});
        mount_token(&mut alone);
        assert!(alone["spec"].get("initContainers").is_none(), "no lists appear that were not there: {alone}");
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "mine", "mountPath": "/data"}]}],
        }});
        mount_token(&mut pod);
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5, "{name}");
        assert_eq!(volumes[0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3607);
        for c in ["initContainers", "containers"].iter().flat_map(|k| pod["spec"][*k].as_array().unwrap()) {
            let mount = c["volumeMounts"].as_array().unwrap().last().unwrap();
            assert_eq!(mount, &json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH}));
        }
        // A pod that already mounts the path everywhere gets nothing more.
        let before = pod.clone();
        mount_token(&mut pod);
        assert_eq!(pod, before);
    }

    #[test]
    fn automount_is_the_pods_choice_first() {
        let sa_off = json!({"automountServiceAccountToken": false});
        assert!(!automount(&json!({"spec": {}}), &sa_off));
        assert!(automount(&json!({"spec": {"automountServiceAccountToken": true}}), &sa_off));
        assert!(!automount(&json!({"spec": {"automountServiceAccountToken": false}}), &json!({})));
        assert!(automount(&json!({"spec": {}}), &json!({})));
    }
}

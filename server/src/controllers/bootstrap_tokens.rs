//! The bootstrap token controllers kube-controller-manager runs, on the Raft leader only (with
//! `--enable-bootstrap-token-auth`): the token cleaner deletes bootstrap token Secrets whose
//! `expiration` has passed, and the bootstrap signer keeps one `jws-kubeconfig-ID` key in the
//! `kube-public/cluster-info` ConfigMap per signing token: a detached JWS (HS256, the whole token
//! as the key) of the ConfigMap's `kubeconfig`, which a joining node checks with its token.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use access::authn::bootstrap_token::{expired, field, NAMESPACE, SECRET_PREFIX, SECRET_TYPE};
use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry::{self, ResourceInfo};
use access::request::Verb;

const PUBLIC_NAMESPACE: &str = "kube-public";
const CLUSTER_INFO: &str = "cluster-info";
const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";
/// Longest the controllers sleep without an event, so expirations are noticed.
const RECHECK: Duration = Duration::from_secs(5);

fn info(resource: &str) -> &'static ResourceInfo {
    registry::lookup("", "v1", resource).expect("core resources are served")
}

/// The detached JWS of `content` for token `id.secret`: `header..signature`.
pub fn detached_signature(content: &str, id: &str, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "HS256", "kid": id}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(content);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, format!("{id}.{secret}").as_bytes());
    let tag = ring::hmac::sign(&key, format!("{header}.{payload}").as_bytes());
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// One pass: expired tokens deleted, signatures brought up to date.
async fn sync(ctx: &Context, cleaner: &Client, signer: &Client) -> ApiResult<()> {
    let now = chrono::Utc::now();
    let secrets = info("secrets");
    let listed = ctx.informers.informer(&secrets.key_prefix()).await.list_under(&secrets.list_prefix(Some(NAMESPACE)));
    let mut signing = BTreeMap::new();
    for item in listed {
        let secret = machinery::stored::parse(&item)?;
        let name = secret["metadata"]["name"].as_str().unwrap_or_default();
        if secret["type"] != SECRET_TYPE || !name.starts_with(SECRET_PREFIX) || secret["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        if expired(&secret, now) {
            match cleaner.delete(&request(secrets, Some(NAMESPACE), name, Verb::Delete), &Default::default()).await {
                Ok(()) | Err(ApiError::NotFound { .. }) => tracing::info!(secret = name, "deleted an expired bootstrap token"),
                Err(e) => return Err(e),
            }
            continue;
        }
        if field(&secret, "usage-bootstrap-signing").as_deref() == Some("true") {
            if let (Some(id), Some(token_secret)) = (field(&secret, "token-id"), field(&secret, "token-secret")) {
                signing.insert(id, token_secret);
            }
        }
    }
    let configmaps = info("configmaps");
    let Some(cm) = ctx.informers.get_parsed(&configmaps.key_prefix(), &configmaps.key(Some(PUBLIC_NAMESPACE), CLUSTER_INFO)).await else { return Ok(()) };
    let Some(kubeconfig) = cm["data"]["kubeconfig"].as_str() else { return Ok(()) };
    let want: BTreeMap<String, String> =
        signing.iter().map(|(id, s)| (format!("{SIGNATURE_PREFIX}{id}"), detached_signature(kubeconfig, id, s))).collect();
    let have: BTreeMap<String, String> = cm["data"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(SIGNATURE_PREFIX))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    if want == have {
        return Ok(());
    }
    let req = request(configmaps, Some(PUBLIC_NAMESPACE), CLUSTER_INFO, Verb::Update);
    let result = signer.update(&req, FieldValidation::Ignore, |current| {
        let mut next = current.clone();
        let Some(data) = next["data"].as_object_mut() else { return Ok(next) };
        data.retain(|k, _| !k.starts_with(SIGNATURE_PREFIX));
        let content = data.get("kubeconfig").and_then(Value::as_str).unwrap_or_default().to_string();
        for (id, s) in &signing {
            data.insert(format!("{SIGNATURE_PREFIX}{id}"), json!(detached_signature(&content, id, s)));
        }
        Ok(next)
    })
    .await;
    match result {
        Ok(()) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The token cleaner and signer, run on the leader ([`crate::controllers::leading`]): after every change to
/// a Secret in `kube-system` or a ConfigMap in `kube-public`, and at least every few seconds.
pub struct BootstrapTokenControllers {
    /// Acts as `token-cleaner`.
    pub cleaner: Client,
    /// Acts as `bootstrap-signer`.
    pub signer: Client,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for BootstrapTokenControllers {
    fn name(&self) -> &'static str {
        "bootstrap-tokens"
    }

    fn watches(&self) -> Vec<String> {
        vec![info("secrets").key_prefix(), info("configmaps").key_prefix()]
    }

    fn recheck(&self) -> Option<Duration> {
        Some(RECHECK)
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        sync(ctx, &self.cleaner, &self.signer).await
    }

    async fn changed(&self, _ctx: &Context, event: &raft_store::Event) -> ApiResult<bool> {
        let secrets = info("secrets").list_prefix(Some(NAMESPACE));
        let public = info("configmaps").list_prefix(Some(PUBLIC_NAMESPACE));
        Ok(event.key.starts_with(&secrets) || event.key.starts_with(&public))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_detached_hs256_with_the_token_as_key() {
        let sig = detached_signature("hello", "abcdef", "0123456789abcdef");
        let (header, rest) = sig.split_once("..").unwrap();
        assert_eq!(URL_SAFE_NO_PAD.decode(header).unwrap(), br#"{"alg":"HS256","kid":"abcdef"}"#);
        // Re-attached, it verifies as an ordinary HS256 JWS.
        let payload = URL_SAFE_NO_PAD.encode("hello");
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"abcdef.0123456789abcdef");
        let tag = URL_SAFE_NO_PAD.decode(rest).unwrap();
        assert!(ring::hmac::verify(&key, format!("{header}.{payload}").as_bytes(), &tag).is_ok());
        assert_ne!(sig, detached_signature("hello!", "abcdef", "0123456789abcdef"));
    }
}

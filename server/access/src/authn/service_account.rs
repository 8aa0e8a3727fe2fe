//! Service-account tokens as bearer credentials: a JWT this server (or a replica sharing its
//! key) signed, for one of its issuers and audiences. With `--service-account-lookup` (the
//! default) the account must still exist with the token's uid, and so must the pod, secret or
//! node a bound token names; a legacy token must still be the one its Secret holds.

use std::sync::Arc;

use base64::Engine;
use raft_store::Store;
use serde_json::Value;

use super::{Authenticated, TokenAuthenticator};
use crate::serviceaccount::claims::{self, Ref, Subject};
use crate::serviceaccount::Tokens;
use crate::UserInfo;
use machinery::registry;

/// Group of every service account, and prefix of its per-namespace group.
pub const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// `extra` keys Kubernetes sets for bound tokens.
const EXTRA_POD_NAME: &str = "authentication.kubernetes.io/pod-name";
const EXTRA_POD_UID: &str = "authentication.kubernetes.io/pod-uid";
const EXTRA_NODE_NAME: &str = "authentication.kubernetes.io/node-name";
const EXTRA_NODE_UID: &str = "authentication.kubernetes.io/node-uid";
/// Longest a failed lookup waits for this replica to catch up.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

pub struct ServiceAccountTokens {
    pub tokens: Arc<Tokens>,
    pub store: Store,
}

impl ServiceAccountTokens {
    fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Result<Option<Value>, String> {
        let info = registry::lookup("", "v1", resource).ok_or("resource not served")?;
        let found = self.store.cache().get(&info.key(namespace, name), None).map_err(|e| e.to_string())?;
        found.map(|o| serde_json::from_slice(&o.data).map_err(|e| e.to_string())).transpose()
    }

    /// The object `r` names must exist with its uid and not be going away.
    fn still_there(&self, resource: &str, kind: &str, namespace: Option<&str>, r: &Ref) -> Result<Value, String> {
        let obj = self.get(resource, namespace, &r.name)?.ok_or_else(|| format!("{kind} \"{}\" not found", r.name))?;
        if !r.uid.is_empty() && obj["metadata"]["uid"] != r.uid.as_str() {
            return Err(format!("{kind} \"{}\" has been recreated: the token was issued for uid {}", r.name, r.uid));
        }
        if obj["metadata"]["deletionTimestamp"].is_string() {
            return Err(format!("{kind} \"{}\" is being deleted", r.name));
        }
        Ok(obj)
    }

    fn look_up(&self, token: &str, s: &Subject) -> Result<(), String> {
        let ns = Some(s.namespace.as_str());
        let account = self.get("serviceaccounts", ns, &s.account.name)?.ok_or_else(|| format!("service account {}/{} has been deleted", s.namespace, s.account.name))?;
        if account["metadata"]["uid"] != s.account.uid.as_str() {
            return Err(format!("service account UID ({}) does not match claim ({})", account["metadata"]["uid"].as_str().unwrap_or_default(), s.account.uid));
        }
        if account["metadata"]["deletionTimestamp"].is_string() {
            return Err(format!("service account {}/{} is being deleted", s.namespace, s.account.name));
        }
        if let Some(secret) = &s.legacy_secret {
            let obj = self.get("secrets", ns, secret)?.ok_or_else(|| format!("secret {}/{secret} not found", s.namespace))?;
            let held = obj["data"]["token"].as_str().and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
            if held.as_deref() != Some(token.as_bytes()) {
                return Err("token does not match server's copy".into());
            }
            if obj["metadata"]["labels"]["kubernetes.io/legacy-token-invalid-since"].is_string() {
                return Err(format!("the token in secret {}/{secret} has been marked invalid", s.namespace));
            }
        }
        if let Some(secret) = &s.secret {
            self.still_there("secrets", "secret", ns, secret)?;
        }
        if let Some(pod) = &s.pod {
            self.still_there("pods", "pod", ns, pod)?;
        }
        if let Some(node) = &s.node {
            // A pod-bound token names its pod's node for information; only a node-bound one
            // depends on the node.
            if s.pod.is_none() {
                self.still_there("nodes", "node", None, node)?;
            }
        }
        Ok(())
    }
}

/// The user a service-account token acts as.
pub fn user_of(s: &Subject) -> UserInfo {
    let mut user = UserInfo::authenticated(
        claims::subject(&s.namespace, &s.account.name),
        vec![ALL_SERVICE_ACCOUNTS.to_string(), format!("{ALL_SERVICE_ACCOUNTS}:{}", s.namespace)],
    );
    user.uid = s.account.uid.clone();
    let mut extra = |key: &str, value: &str| {
        if !value.is_empty() {
            user.extra.insert(key.to_string(), vec![value.to_string()]);
        }
    };
    if let Some(pod) = &s.pod {
        extra(EXTRA_POD_NAME, &pod.name);
        extra(EXTRA_POD_UID, &pod.uid);
    }
    if let Some(node) = &s.node {
        extra(EXTRA_NODE_NAME, &node.name);
        extra(EXTRA_NODE_UID, &node.uid);
    }
    if let Some(jti) = &s.jti {
        extra(crate::user::CREDENTIAL_ID, &format!("JTI={jti}"));
    }
    user
}

#[async_trait::async_trait]
impl TokenAuthenticator for ServiceAccountTokens {
    fn name(&self) -> &'static str {
        "service-account"
    }

    fn audience_aware(&self) -> bool {
        true
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        let Some(claims) = self.tokens.verify(token)? else { return Ok(None) };
        let subject = claims::read(&claims)?;
        // Legacy tokens predate audiences: they are for this server alone.
        let granted: Vec<String> = if subject.legacy_secret.is_some() {
            audiences.iter().filter(|a| self.tokens.api_audiences.contains(a)).cloned().collect()
        } else {
            audiences.iter().filter(|a| subject.audiences.contains(a)).cloned().collect()
        };
        if granted.is_empty() {
            return Err(format!("token audiences {:?} is invalid for the target audiences {audiences:?}", subject.audiences));
        }
        if self.tokens.lookup {
            // An account (or pod) created through another replica a moment ago may not be
            // applied here yet: a failed lookup is tried again once this replica has caught
            // up with the leader's commit. Only tokens with a valid signature get this far.
            let applied = self.store.cache().applied();
            if let Err(first) = self.look_up(token, &subject) {
                let caught_up = tokio::time::timeout(CATCH_UP, self.store.linearizable_rev()).await;
                if !matches!(caught_up, Ok(Ok(_))) || self.store.cache().applied() == applied {
                    return Err(first);
                }
                self.look_up(token, &subject)?;
            }
        }
        Ok(Some(Authenticated { user: user_of(&subject), audiences: granted }))
    }
}

//! Bootstrap tokens (`--enable-bootstrap-token-auth`): a token `ID.SECRET` (`[a-z0-9]{6}` and
//! `[a-z0-9]{16}`) is the Secret `bootstrap-token-ID` of type `bootstrap.kubernetes.io/token` in
//! `kube-system`, when it holds that secret, allows authentication and has not expired. The user
//! is `system:bootstrap:ID` in `system:bootstrappers` and the Secret's `auth-extra-groups`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use raft_store::Store;
use serde_json::Value;

use super::{Authenticated, TokenAuthenticator};
use crate::UserInfo;
use machinery::registry;

pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const SECRET_PREFIX: &str = "bootstrap-token-";
pub const NAMESPACE: &str = "kube-system";
pub const GROUP: &str = "system:bootstrappers";
const USER_PREFIX: &str = "system:bootstrap:";

/// `(id, secret)` of a token in the bootstrap format.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// A string field of a bootstrap token Secret (from `data`, base64; `stringData` is merged into
/// `data` when written).
pub fn field(secret: &Value, key: &str) -> Option<String> {
    let raw = secret["data"][key].as_str()?;
    String::from_utf8(STANDARD.decode(raw).ok()?).ok()
}

/// Whether the Secret's `expiration` has passed (an unreadable one counts as passed).
pub fn expired(secret: &Value, now: chrono::DateTime<chrono::Utc>) -> bool {
    match field(secret, "expiration") {
        None => false,
        Some(t) => chrono::DateTime::parse_from_rfc3339(&t).map_or(true, |t| t <= now),
    }
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub struct BootstrapTokens {
    pub store: Store,
}

impl BootstrapTokens {
    /// The user of a bootstrap token Secret presented with `id` and `secret`, or why not.
    pub fn user(obj: &Value, id: &str, secret: &str, now: chrono::DateTime<chrono::Utc>) -> Result<UserInfo, String> {
        if obj["type"] != SECRET_TYPE {
            return Err(format!("secret {SECRET_PREFIX}{id} is not a bootstrap token"));
        }
        if obj["metadata"]["deletionTimestamp"].is_string() {
            return Err(format!("bootstrap token {id} is being deleted"));
        }
        if field(obj, "token-id").as_deref() != Some(id) || !field(obj, "token-secret").is_some_and(|s| same(s.as_bytes(), secret.as_bytes())) {
            return Err(format!("bootstrap token {id} does not match its secret"));
        }
        if expired(obj, now) {
            return Err(format!("bootstrap token {id} has expired"));
        }
        if field(obj, "usage-bootstrap-authentication").as_deref() != Some("true") {
            return Err(format!("bootstrap token {id} is not usable for authentication"));
        }
        let mut groups = vec![GROUP.to_string()];
        for g in field(obj, "auth-extra-groups").unwrap_or_default().split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !g.starts_with("system:bootstrappers:") {
                return Err(format!("bootstrap token {id} has an invalid extra group {g:?}"));
            }
            if !groups.iter().any(|x| x == g) {
                groups.push(g.to_string());
            }
        }
        Ok(UserInfo::authenticated(format!("{USER_PREFIX}{id}"), groups))
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for BootstrapTokens {
    fn name(&self) -> &'static str {
        "bootstrap-token"
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        let Some((id, secret)) = parse_token(token) else { return Ok(None) };
        let info = registry::lookup("", "v1", "secrets").ok_or("secrets are not served")?;
        let key = info.key(Some(NAMESPACE), &format!("{SECRET_PREFIX}{id}"));
        let Some(found) = self.store.cache().get(&key, None).map_err(|e| e.to_string())? else { return Ok(None) };
        let obj: Value = serde_json::from_slice(&found.data).map_err(|e| e.to_string())?;
        let user = BootstrapTokens::user(&obj, id, secret, chrono::Utc::now())?;
        Ok(Some(Authenticated { user, audiences: audiences.to_vec() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(fields: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = fields.iter().map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v)))).collect();
        json!({"type": SECRET_TYPE, "metadata": {"name": "bootstrap-token-abcdef"}, "data": data})
    }

    #[test]
    fn tokens_have_the_bootstrap_form() {
        assert_eq!(parse_token("abcdef.0123456789abcdef"), Some(("abcdef", "0123456789abcdef")));
        for bad in ["abcdef0123456789abcdef", "ABCDEF.0123456789abcdef", "abcde.0123456789abcdef", "abcdef.0123456789abcde", "abcdef.0123456789abcdef.x"] {
            assert_eq!(parse_token(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_secret_decides() {
        let now = chrono::Utc::now();
        let base = [("token-id", "abcdef"), ("token-secret", "0123456789abcdef"), ("usage-bootstrap-authentication", "true")];
        let user = BootstrapTokens::user(&secret(&base), "abcdef", "0123456789abcdef", now).unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(user.groups, vec!["system:bootstrappers", "system:authenticated"]);
        assert!(BootstrapTokens::user(&secret(&base), "abcdef", "fffffffffffffff0", now).is_err());
        let extra = [&base[..], &[("auth-extra-groups", "system:bootstrappers:kubeadm:default-node-token")]].concat();
        let user = BootstrapTokens::user(&secret(&extra), "abcdef", "0123456789abcdef", now).unwrap();
        assert!(user.in_group("system:bootstrappers:kubeadm:default-node-token"));
        let bad_group = [&base[..], &[("auth-extra-groups", "system:masters")]].concat();
        assert!(BootstrapTokens::user(&secret(&bad_group), "abcdef", "0123456789abcdef", now).is_err());
        let past = [&base[..], &[("expiration", "2020-01-01T00:00:00Z")]].concat();
        assert!(BootstrapTokens::user(&secret(&past), "abcdef", "0123456789abcdef", now).unwrap_err().contains("expired"));
        let signing_only = [("token-id", "abcdef"), ("token-secret", "0123456789abcdef"), ("usage-bootstrap-signing", "true")];
        assert!(BootstrapTokens::user(&secret(&signing_only), "abcdef", "0123456789abcdef", now).is_err());
    }
}

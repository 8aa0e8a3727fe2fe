//! The identity a request acts as: what authentication (and impersonation) produced.

use std::collections::BTreeMap;

/// Every authenticated user is in this group.
/// The extra key naming the credential a user authenticated with (a token's `JTI=`, a
/// certificate's `X509SHA256=`).
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// Anonymous requests are in this group.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user name of anonymous requests.
pub const ANONYMOUS: &str = "system:anonymous";
/// Members are allowed everything before any authorizer is asked.
pub const PRIVILEGED_GROUP: &str = "system:masters";
/// User names of service accounts start with this, then `NAMESPACE:NAME`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// User attributes, as Kubernetes' `user.Info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> UserInfo {
        UserInfo { name: ANONYMOUS.into(), groups: vec![ALL_UNAUTHENTICATED.into()], ..Default::default() }
    }

    /// An authenticated user: `system:authenticated` is added unless already present.
    pub fn authenticated(name: impl Into<String>, mut groups: Vec<String>) -> UserInfo {
        if !groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            groups.push(ALL_AUTHENTICATED.into());
        }
        UserInfo { name: name.into(), groups, ..Default::default() }
    }

    /// The server acting on its own behalf (post-start hooks, controllers), as Kubernetes'
    /// loopback client: a member of `system:masters`.
    pub fn loopback() -> std::sync::Arc<UserInfo> {
        static LOOPBACK: std::sync::OnceLock<std::sync::Arc<UserInfo>> = std::sync::OnceLock::new();
        LOOPBACK.get_or_init(|| std::sync::Arc::new(UserInfo::authenticated("system:apiserver", vec![PRIVILEGED_GROUP.into()]))).clone()
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// `(namespace, name)` when this is a service account's user name.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        service_account_of(&self.name)
    }
}

/// `(namespace, name)` of a service account user name `system:serviceaccount:NS:NAME`.
pub fn service_account_of(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// The user name of a service account.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The groups every service account is in.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")]
}

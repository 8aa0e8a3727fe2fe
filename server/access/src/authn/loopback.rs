//! The identity of a request the server makes to itself (its controllers and post-start hooks,
//! through the loopback client). It travels in the request's extensions, which nothing from the
//! network can set, so it needs no token. Each controller acts as its own user, as
//! kube-controller-manager's controllers do with their service-account credentials, and RBAC's
//! default policy grants each what it needs; the server's own work acts as `system:apiserver`.

use crate::user::UserInfo;

/// Who an in-process request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loopback(pub UserInfo);

impl Loopback {
    /// kube-apiserver's own identity: `system:apiserver`, in `system:masters`.
    pub fn apiserver() -> Loopback {
        Loopback(UserInfo::loopback().as_ref().clone())
    }

    /// The service account kube-controller-manager gives the controller `name`
    /// (`system:serviceaccount:kube-system:NAME`); the default policy binds
    /// `system:controller:NAME` to it.
    pub fn controller(name: &str) -> Loopback {
        Loopback(UserInfo::authenticated(
            format!("system:serviceaccount:kube-system:{name}"),
            vec!["system:serviceaccounts".into(), "system:serviceaccounts:kube-system".into()],
        ))
    }
}

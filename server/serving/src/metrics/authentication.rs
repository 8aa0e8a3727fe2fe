//! kube-apiserver's authentication figures: attempts and their time by result, and requests by
//! (a coarse name of) the user who made them.

use std::time::Duration;

use prometheus::{HistogramVec, IntCounterVec, Registry};

use super::family::{self, Level};

pub struct Authentication {
    attempts: IntCounterVec,
    duration: HistogramVec,
    users: IntCounterVec,
}

/// How an authentication attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthnResult {
    Success,
    /// Credentials given and refused.
    Failure,
    /// The attempt itself failed (an authenticator could not be asked).
    Error,
}

impl Authentication {
    pub(super) fn new(r: &Registry) -> Authentication {
        Authentication {
            attempts: family::counter(r, "authentication_attempts", Level::Alpha, "Counter of authenticated attempts.", &["result"]),
            duration: family::histogram(
                r,
                "authentication_duration_seconds",
                Level::Alpha,
                "Authentication duration in seconds broken out by result.",
                &["result"],
                &family::exponential(0.001, 2.0, 15),
            ),
            users: family::counter(r, "authenticated_user_requests", Level::Alpha, "Counter of authenticated requests broken out by username.", &["username"]),
        }
    }

    /// Counts one attempt; `user` is who a successful one found.
    pub fn observe(&self, result: AuthnResult, took: Duration, user: Option<&str>) {
        let label = match result {
            AuthnResult::Success => "success",
            AuthnResult::Failure => "failure",
            AuthnResult::Error => "error",
        };
        self.attempts.with_label_values(&[label]).inc();
        self.duration.with_label_values(&[label]).observe(took.as_secs_f64());
        if let Some(user) = user {
            self.users.with_label_values(&[coarse_username(user)]).inc();
        }
    }
}

/// The user name as kube-apiserver labels it: a few well-known names as they are, an e-mail
/// address as `email_id`, anyone else as `other` (the label's values stay few).
fn coarse_username(name: &str) -> &str {
    match name {
        "admin" | "client" | "kube_proxy" | "kubelet" | "system:serviceaccount:kube-system:default" => name,
        n if n.contains('@') => "email_id",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_coarsened_as_kube_apiserver_does() {
        assert_eq!(coarse_username("kubelet"), "kubelet");
        assert_eq!(coarse_username("jane@example.com"), "email_id");
        assert_eq!(coarse_username("system:serviceaccount:default:builder"), "other");
        assert_eq!(coarse_username("system:admin"), "other");
    }
}

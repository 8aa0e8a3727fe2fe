//! The `AlwaysAllow` and `AlwaysDeny` modes.

use super::{Authorizer, UserRules, Verdict};
use crate::attributes::Attributes;
use crate::rbac::rules::Rule;
use crate::user::UserInfo;

/// Allows every request.
pub struct AlwaysAllow;

/// Has no opinion on any request, so that a chain of it alone refuses everything.
pub struct AlwaysDeny;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    fn mode(&self) -> &'static str {
        "AlwaysAllow"
    }

    async fn authorize(&self, _: &Attributes) -> Verdict {
        Verdict::allow("")
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> UserRules {
        let all = |v: &str| vec![v.to_string()];
        UserRules {
            resource: vec![Rule { verbs: all("*"), api_groups: all("*"), resources: all("*"), ..Default::default() }],
            non_resource: vec![Rule { verbs: all("*"), non_resource_urls: all("*"), ..Default::default() }],
            ..Default::default()
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for AlwaysDeny {
    fn mode(&self) -> &'static str {
        "AlwaysDeny"
    }

    async fn authorize(&self, _: &Attributes) -> Verdict {
        Verdict::no_opinion("Everything is forbidden.")
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> UserRules {
        UserRules::default()
    }
}

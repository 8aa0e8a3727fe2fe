//! Impersonation: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-*` headers. The caller needs the `impersonate` verb on each requested
//! identity (users, groups and service accounts in the core group; `userextras/KEY` and `uids`
//! in `authentication.k8s.io`); the request then acts as the impersonated user.

use http::HeaderMap;

use super::attributes::Attributes;
use super::authz::{forbidden, Chain, Outcome};
use super::user::{service_account_groups, service_account_of, UserInfo, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS};
use machinery::error::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One identity a request asks to act as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Requested {
    /// What the caller must be allowed to `impersonate` for this.
    fn attributes(&self, caller: &UserInfo) -> Attributes {
        let (group, resource, subresource, namespace, name) = match self {
            Requested::ServiceAccount { namespace, name } => ("", "serviceaccounts", "", namespace.as_str(), name.as_str()),
            Requested::User(name) => ("", "users", "", "", name.as_str()),
            Requested::Group(name) => ("", "groups", "", "", name.as_str()),
            Requested::Extra { key, value } => ("authentication.k8s.io", "userextras", key.as_str(), "", value.as_str()),
            Requested::Uid(uid) => ("authentication.k8s.io", "uids", "", "", uid.as_str()),
        };
        Attributes {
            user: caller.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// Go's `%v` of the object reference Kubernetes builds, for the 400's message.
    fn describe(&self) -> String {
        let (kind, ns, name, api_version, field) = match self {
            Requested::ServiceAccount { namespace, name } => ("ServiceAccount", namespace.as_str(), name.as_str(), "", ""),
            Requested::User(n) => ("User", "", n.as_str(), "", ""),
            Requested::Group(n) => ("Group", "", n.as_str(), "", ""),
            Requested::Extra { key, value } => ("UserExtra", "", value.as_str(), "authentication.k8s.io/v1", key.as_str()),
            Requested::Uid(u) => ("UID", "", u.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field}}}")
    }
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = String> + 'a {
    headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The identities the headers ask for, in Kubernetes' order (user, groups, extras, uid);
/// empty when the request impersonates no one. Groups, extras or a uid without a user are 400.
pub fn requested(headers: &HeaderMap) -> Result<Vec<Requested>, ApiError> {
    let mut out = Vec::new();
    let user = header_values(headers, USER).next().filter(|u| !u.is_empty());
    if let Some(u) = &user {
        out.push(match service_account_of(u) {
            Some((namespace, name)) => Requested::ServiceAccount { namespace: namespace.into(), name: name.into() },
            None => Requested::User(u.clone()),
        });
    }
    out.extend(header_values(headers, GROUP).map(Requested::Group));
    let mut extras: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        if let Some(raw) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_decode(raw).unwrap_or_else(|| raw.to_string());
            extras.push((key, String::from_utf8_lossy(value.as_bytes()).into_owned()));
        }
    }
    out.extend(extras.into_iter().map(|(key, value)| Requested::Extra { key, value }));
    if let Some(uid) = header_values(headers, UID).next().filter(|u| !u.is_empty()) {
        out.push(Requested::Uid(uid));
    }
    if user.is_none() && !out.is_empty() {
        let list: Vec<String> = out.iter().map(Requested::describe).collect();
        return Err(ApiError::bad_request(format!("requested [{}] without impersonating a user", list.join(" "))));
    }
    Ok(out)
}

/// `%XX` decoding of an extra key (impersonation and the authenticating proxy); `None` when
/// malformed.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The user the request acts as: `caller` itself, or the impersonated identity once every
/// requested part of it is authorized for the caller (403 naming the first refused part).
pub async fn impersonate(chain: &Chain, caller: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let requests = requested(headers)?;
    if requests.is_empty() {
        return Ok(caller);
    }
    let groups_given = requests.iter().any(|r| matches!(r, Requested::Group(_)));
    let mut user = UserInfo::default();
    for r in &requests {
        let attrs = r.attributes(&caller);
        match chain.authorize(&attrs).await {
            Outcome::Decided(v) if v.allowed() => {}
            Outcome::Decided(v) => return Err(forbidden(&attrs, &v.reason)),
            Outcome::Failed(e) => return Err(forbidden(&attrs, &e)),
        }
        match r {
            Requested::ServiceAccount { namespace, name } => {
                user.name = super::user::service_account_user(namespace, name);
                if !groups_given {
                    user.groups = service_account_groups(namespace);
                }
            }
            Requested::User(name) => user.name = name.clone(),
            Requested::Group(g) => user.groups.push(g.clone()),
            Requested::Extra { key, value } => user.extra.entry(key.clone()).or_default().push(value.clone()),
            Requested::Uid(uid) => user.uid = uid.clone(),
        }
    }
    if user.name != ANONYMOUS {
        if !user.groups.iter().any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED) {
            user.groups.push(ALL_AUTHENTICATED.into());
        }
    } else if !user.in_group(ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_UNAUTHENTICATED.into());
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn extra_keys_are_percent_decoded() {
        assert_eq!(percent_decode("a%2Fb"), Some("a/b".into()));
        assert_eq!(percent_decode("a%2"), None);
        assert_eq!(percent_decode("%zz"), None);
    }

    #[test]
    fn parses_every_header() {
        let h = headers(&[
            ("Impersonate-User", "system:serviceaccount:ns:sa"),
            ("Impersonate-Group", "g1"),
            ("Impersonate-Group", "g2"),
            ("Impersonate-Extra-Scopes%2Fa", "v"),
            ("Impersonate-Uid", "1234"),
        ]);
        let r = requested(&h).unwrap();
        assert_eq!(
            r,
            vec![
                Requested::ServiceAccount { namespace: "ns".into(), name: "sa".into() },
                Requested::Group("g1".into()),
                Requested::Group("g2".into()),
                Requested::Extra { key: "scopes/a".into(), value: "v".into() },
                Requested::Uid("1234".into()),
            ]
        );
        assert!(requested(&HeaderMap::new()).unwrap().is_empty());
    }

    #[test]
    fn group_without_user_is_bad_request() {
        let e = requested(&headers(&[("Impersonate-Group", "g")])).unwrap_err();
        assert_eq!(e.code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(e.to_string(), "requested [{Group  g    }] without impersonating a user");
    }

    proptest::proptest! {
        /// Any header names and bytes a client sends are parsed (or refused) without a panic.
        #[test]
        fn headers_never_panic(
            pairs in proptest::collection::vec((
                proptest::prop_oneof![
                    proptest::strategy::Just("impersonate-user".to_string()),
                    proptest::strategy::Just("impersonate-group".to_string()),
                    proptest::strategy::Just("impersonate-uid".to_string()),
                    "impersonate-extra-[a-z0-9%]{0,12}",
                ],
                proptest::collection::vec(proptest::num::u8::ANY, 0..24),
            ), 0..6)
        ) {
            let mut h = HeaderMap::new();
            for (name, value) in &pairs {
                if let (Ok(n), Ok(v)) = (http::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(value)) {
                    h.append(n, v);
                }
            }
            let _ = requested(&h);
        }

        #[test]
        fn percent_decoding_never_panics(s in "\\PC{0,16}") {
            let _ = percent_decode(&s);
        }
    }
}

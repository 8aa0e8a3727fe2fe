//! The authenticating proxy (`--requestheader-*`): on a connection whose client certificate
//! verifies against `--requestheader-client-ca-file` (checked by the TLS layer, which hands over
//! a [`ProxyIdentity`]) and whose Common Name is allowed, the user is the first username header
//! with a value, the groups every value of the group headers, and each header starting with an
//! extra prefix one extra attribute (the rest of its name lowercased and percent-decoded). The
//! headers are removed from every request, trusted or not, before anything else reads it.

use http::{HeaderMap, HeaderName};

use crate::impersonation::percent_decode;
use crate::UserInfo;
use crate::options::AuthenticationOptions;
use crate::authn::x509::ProxyIdentity;

pub struct RequestHeader {
    username: Vec<HeaderName>,
    groups: Vec<HeaderName>,
    /// Lowercase.
    extra_prefixes: Vec<String>,
    allowed_names: Vec<String>,
    /// The flags as given, for `extension-apiserver-authentication`.
    published: std::collections::BTreeMap<String, String>,
}

fn header_names(flag: &str, names: &[String]) -> Result<Vec<HeaderName>, String> {
    names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(|n| HeaderName::from_bytes(n.as_bytes()).map_err(|_| format!("{flag}: {n:?} is not a header name")))
        .collect()
}

impl RequestHeader {
    /// The proxy the flags describe, if any.
    pub fn from_args(args: &AuthenticationOptions) -> Result<Option<RequestHeader>, String> {
        let username = header_names("--requestheader-username-headers", &args.requestheader_username_headers)?;
        match (&args.requestheader_client_ca_file, username.is_empty()) {
            (None, true) => return Ok(None),
            (None, false) => return Err("--requestheader-username-headers needs --requestheader-client-ca-file".into()),
            (Some(_), true) => return Err("--requestheader-client-ca-file needs --requestheader-username-headers".into()),
            (Some(_), false) => {}
        }
        let list = |v: &[String]| serde_json::to_string(v).unwrap_or_default();
        let published = std::collections::BTreeMap::from_iter([
            ("requestheader-allowed-names".to_string(), list(&args.requestheader_allowed_names)),
            ("requestheader-username-headers".to_string(), list(&args.requestheader_username_headers)),
            ("requestheader-group-headers".to_string(), list(&args.requestheader_group_headers)),
            ("requestheader-extra-headers-prefix".to_string(), list(&args.requestheader_extra_headers_prefix)),
        ]);
        Ok(Some(RequestHeader {
            username,
            groups: header_names("--requestheader-group-headers", &args.requestheader_group_headers)?,
            extra_prefixes: args.requestheader_extra_headers_prefix.iter().map(|p| p.trim().to_ascii_lowercase()).filter(|p| !p.is_empty()).collect(),
            allowed_names: args.requestheader_allowed_names.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
            published,
        }))
    }

    /// The user the headers name, when the proxy may name one.
    pub fn user(&self, headers: &HeaderMap, proxy: &ProxyIdentity) -> Option<UserInfo> {
        if !self.allowed_names.is_empty() && !self.allowed_names.contains(&proxy.name) {
            tracing::debug!(proxy = %proxy.name, "a proxy certificate whose name is not allowed; its headers are ignored");
            return None;
        }
        let name = self.username.iter().find_map(|h| headers.get_all(h).iter().filter_map(|v| v.to_str().ok()).find(|v| !v.is_empty()))?;
        let groups = self.groups.iter().flat_map(|h| headers.get_all(h).iter().filter_map(|v| v.to_str().ok()).map(str::to_string)).collect();
        let mut user = UserInfo::authenticated(name, groups);
        for (header, value) in headers {
            let Some(rest) = self.extra_prefixes.iter().find_map(|p| header.as_str().strip_prefix(p.as_str())) else { continue };
            let (Some(key), Ok(value)) = (percent_decode(rest), value.to_str()) else { continue };
            user.extra.entry(key.to_lowercase()).or_default().push(value.to_string());
        }
        Some(user)
    }

    /// Removes every header of the proxy protocol.
    pub fn strip(&self, headers: &mut HeaderMap) {
        for h in self.username.iter().chain(&self.groups) {
            headers.remove(h);
        }
        let extra: Vec<HeaderName> = headers.keys().filter(|h| self.extra_prefixes.iter().any(|p| h.as_str().starts_with(p.as_str()))).cloned().collect();
        for h in extra {
            headers.remove(h);
        }
    }

    /// What `kube-system/extension-apiserver-authentication` publishes of the proxy settings
    /// (the flags as given, each a JSON list, and the CA).
    pub fn published(&self, ca_pem: &str) -> std::collections::BTreeMap<String, String> {
        let mut data = self.published.clone();
        data.insert("requestheader-client-ca-file".into(), ca_pem.to_string());
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use crate::options::Flags;

    fn proxy() -> RequestHeader {
        let args = Flags::parse_from([
            "apiserver",
            "--requestheader-client-ca-file=/ca.crt",
            "--requestheader-username-headers=X-Remote-User,X-Other-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-allowed-names=front-proxy",
        ]).authentication;
        RequestHeader::from_args(&args).unwrap().unwrap()
    }

    #[test]
    fn headers_name_the_user_for_an_allowed_proxy() {
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-user", "".parse().unwrap());
        headers.insert("x-other-user", "alice".parse().unwrap());
        headers.append("x-remote-group", "dev".parse().unwrap());
        headers.append("x-remote-group", "ops".parse().unwrap());
        headers.insert("x-remote-extra-acme.com%2fproject", "p1".parse().unwrap());
        headers.insert("x-remote-extra-Scopes", "s1".parse().unwrap());
        let p = proxy();
        let user = p.user(&headers, &ProxyIdentity { name: "front-proxy".into() }).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(user.extra["acme.com/project"], ["p1"]);
        assert_eq!(user.extra["scopes"], ["s1"]);
        assert_eq!(p.user(&headers, &ProxyIdentity { name: "someone-else".into() }), None);
        p.strip(&mut headers);
        assert!(headers.is_empty(), "{headers:?}");
    }

    #[test]
    fn the_flags_go_together() {
        let lone = Flags::parse_from(["apiserver", "--requestheader-username-headers=X-Remote-User"]).authentication;
        assert!(RequestHeader::from_args(&lone).is_err());
        assert!(RequestHeader::from_args(&Flags::parse_from(["apiserver"]).authentication).unwrap().is_none());
    }
}

//! Request attributes, as Kubernetes' RequestInfo and `authorizer.Attributes`: what a request
//! does (verb, API group, resource, subresource, namespace, name, or a non-resource path) and who
//! asks. Derived from the path, method and query alone, before any handler or registry lookup,
//! so that an unknown resource is authorized (403) before it is found missing (404).

use http::Method;

use super::user::UserInfo;
use machinery::query::Params;

/// Everything an authorizer may look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb (`impersonate`, `bind`, `escalate`, `proxy`); for non-resource requests the
    /// lowercased HTTP method.
    pub verb: String,
    pub resource_request: bool,
    /// The request path (non-resource requests are authorized by it).
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The raw selectors of list, watch and deletecollection requests.
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

/// Subresources of a namespace that share the `namespaces/{name}/...` shape with namespaced
/// collections.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

impl Attributes {
    /// The attributes of an HTTP request made by `user`.
    pub fn of_request(user: UserInfo, method: &Method, path: &str, params: &Params) -> Attributes {
        let parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
        let non_resource = || Attributes {
            user: user.clone(),
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            ..Default::default()
        };
        let (group, rest) = match parts.as_slice() {
            ["api", rest @ ..] if rest.len() >= 2 => ("", rest),
            ["apis", g, rest @ ..] if rest.len() >= 2 => (*g, rest),
            _ => return non_resource(),
        };
        let (version, mut rest) = (rest[0], &rest[1..]);
        let mut verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
        // `/watch/...` and `/proxy/...` name their verb in the path.
        if matches!(rest.first(), Some(&"watch") | Some(&"proxy")) {
            if rest.len() < 2 {
                return non_resource();
            }
            verb = rest[0].to_string();
            rest = &rest[1..];
        }
        let mut namespace = String::new();
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            namespace = rest[1].to_string();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        let mut attrs = Attributes {
            user,
            resource_request: true,
            path: path.to_string(),
            api_group: group.to_string(),
            api_version: version.to_string(),
            namespace,
            ..Default::default()
        };
        attrs.resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
        attrs.name = rest.get(1).map(|s| s.to_string()).unwrap_or_default();
        if verb != "proxy" {
            attrs.subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
        }
        if attrs.name.is_empty() && (verb == "get" || verb == "delete" || verb == "watch") {
            attrs.label_selector = params.get("labelSelector").map(str::to_string);
            attrs.field_selector = params.get("fieldSelector").map(str::to_string);
        }
        if attrs.name.is_empty() && verb == "get" {
            verb = if watch_requested(params) { "watch" } else { "list" }.to_string();
        }
        if attrs.name.is_empty() && (verb == "list" || verb == "watch") {
            // A list or watch of one object by name is authorized for that name.
            if let Some(name) = attrs.field_selector.as_deref().and_then(exact_name) {
                attrs.name = name;
            }
        }
        if attrs.name.is_empty() && verb == "delete" {
            verb = "deletecollection".to_string();
        }
        attrs.verb = verb;
        attrs
    }

    /// Whether the request's field selector requires `field` to equal `value`.
    pub fn field_requires(&self, field: &str, value: &str) -> bool {
        self.field_selector.as_deref().and_then(|s| required_value(s, field)) == Some(value)
    }

    /// Whether the verb only reads (`get`, `list`, `watch`).
    pub fn is_read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }

    /// `resource/subresource`, or the resource alone.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// Whether `watch` asks for a watch; a value that does not parse counts as asking, as in
/// Kubernetes.
fn watch_requested(params: &Params) -> bool {
    match params.get("watch") {
        None => false,
        Some(v) => !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"),
    }
}

/// The value a field selector requires `field` to equal (`field=x` or `field==x`).
fn required_value<'a>(selector: &'a str, field: &str) -> Option<&'a str> {
    selector.split(',').find_map(|term| {
        let (f, value) = term.split_once("==").or_else(|| term.split_once('=')).filter(|(f, _)| !f.ends_with('!'))?;
        (f.trim() == field).then(|| value.trim())
    })
}

/// The name a field selector requires exactly (`metadata.name=x` or `metadata.name==x`), when
/// it is a valid path segment.
fn exact_name(selector: &str) -> Option<String> {
    required_value(selector, "metadata.name").filter(|v| valid_path_segment(v)).map(str::to_string)
}

fn valid_path_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: Method, path_and_query: &str) -> Attributes {
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        Attributes::of_request(UserInfo::anonymous(), &method, path, &Params::parse(Some(query)).unwrap())
    }

    #[test]
    fn resource_requests() {
        let a = attrs(Method::GET, "/api/v1/namespaces/ns/configmaps/x");
        assert_eq!((a.verb.as_str(), a.resource.as_str(), a.namespace.as_str(), a.name.as_str()), ("get", "configmaps", "ns", "x"));
        let a = attrs(Method::GET, "/api/v1/namespaces/ns/configmaps?watch=1");
        assert_eq!(a.verb, "watch");
        let a = attrs(Method::GET, "/api/v1/watch/namespaces/ns/configmaps");
        assert_eq!((a.verb.as_str(), a.resource.as_str()), ("watch", "configmaps"));
        let a = attrs(Method::DELETE, "/apis/apps/v1/namespaces/ns/deployments?labelSelector=a%3Db");
        assert_eq!((a.verb.as_str(), a.api_group.as_str()), ("deletecollection", "apps"));
        assert_eq!(a.label_selector.as_deref(), Some("a=b"));
        let a = attrs(Method::PUT, "/apis/apps/v1/namespaces/ns/deployments/d/scale");
        assert_eq!((a.verb.as_str(), a.subresource.as_str(), a.combined_resource().as_str()), ("update", "scale", "deployments/scale"));
        let a = attrs(Method::GET, "/api/v1/namespaces/ns");
        assert_eq!((a.resource.as_str(), a.name.as_str(), a.namespace.as_str()), ("namespaces", "ns", "ns"));
        let a = attrs(Method::PUT, "/api/v1/namespaces/ns/finalize");
        assert_eq!((a.resource.as_str(), a.name.as_str(), a.subresource.as_str()), ("namespaces", "ns", "finalize"));
        let a = attrs(Method::GET, "/api/v1/pods?fieldSelector=metadata.name%3Dp1");
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "p1"));
        let a = attrs(Method::GET, "/apis/unknown.example.com/v1/things");
        assert!(a.resource_request);
        assert_eq!(a.resource, "things");
    }

    #[test]
    fn non_resource_requests() {
        for p in ["/healthz", "/version", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/openapi/v2"] {
            let a = attrs(Method::GET, p);
            assert!(!a.resource_request, "{p}");
            assert_eq!(a.verb, "get");
            assert_eq!(a.path, p);
        }
        assert_eq!(attrs(Method::POST, "/metrics").verb, "post");
    }
}

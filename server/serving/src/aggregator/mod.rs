//! The aggregation layer: an APIService that names a Service hands its group/version to that
//! Service, an extension API server. Requests under `/apis/{group}/{version}` are authenticated,
//! audited, flow-controlled and authorized here, then proxied to it with the user in the
//! request headers it trusts ([`proxy`]); the leader keeps each APIService's `Available`
//! condition (`controllers::apiservice_availability`); discovery lists its group and, fetched from it, its resources
//! ([`discovery`]). What this server serves itself (built-in and custom resources) is never
//! handed away.

pub mod discovery;
pub mod openapi;
pub mod proxy;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

use access::UserInfo;
use crate::context::Ctx;
use machinery::webhook::{client_config, Endpoint};

/// Where APIServices are stored.
pub const PREFIX: &str = "/registry/apiregistration.k8s.io/apiservices/";

/// The APIService named `{version}.{group}`, when it names a Service.
fn remote_named(ctx: &Ctx, group: &str, version: &str) -> Option<Value> {
    let apiservice = client_config::get(&ctx.store, &format!("{PREFIX}{version}.{group}")).ok()??;
    apiservice["spec"]["service"].is_object().then_some(apiservice)
}

/// The APIService an extension server serves `path` for (`/apis/{group}/{version}` and below),
/// unless this server serves that group/version itself.
pub fn remote_for(ctx: &Ctx, path: &str) -> Option<Value> {
    let mut segments = path.trim_start_matches('/').split('/');
    let (Some("apis"), Some(group), Some(version)) = (segments.next(), segments.next(), segments.next()) else { return None };
    if version.is_empty() || machinery::registry::serves(group, version) {
        return None;
    }
    remote_named(ctx, group, version)
}

/// Every APIService that names a Service.
pub fn remotes(ctx: &Ctx) -> Vec<Value> {
    let Ok(listed) = ctx.store.cache().list(PREFIX, None, None, None, &|_| true) else { return Vec::new() };
    listed
        .items
        .iter()
        .filter_map(|o| serde_json::from_slice::<Value>(&o.data).ok())
        .filter(|a| {
            let (group, version) = (a["spec"]["group"].as_str().unwrap_or_default(), a["spec"]["version"].as_str().unwrap_or_default());
            a["spec"]["service"].is_object() && !machinery::registry::serves(group, version)
        })
        .collect()
}

/// Whether the APIService's `Available` condition is `True`.
pub fn is_available(apiservice: &Value) -> bool {
    apiservice["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Available" && c["status"] == "True")
}

/// The extension server's address: the Service's endpoint, verified by the APIService's
/// `caBundle` under the name `{service}.{namespace}.svc` (or not at all, when the APIService
/// says `insecureSkipTLSVerify`), called with this server's proxy client certificate.
pub fn endpoint(store: &raft_store::Store, settings: &crate::context::Settings, apiservice: &Value) -> Result<Endpoint, String> {
    let spec = &apiservice["spec"];
    let service = &spec["service"];
    let config = json!({
        "service": {"namespace": service["namespace"], "name": service["name"], "port": service["port"].as_i64().unwrap_or(443)},
        "caBundle": spec["caBundle"],
    });
    let client = settings.proxy_client.as_ref().map(|c| c.pair());
    let target = client_config::endpoint_as(store, &config, client.clone())?;
    match spec["insecureSkipTLSVerify"] == true {
        true => target.without_verification(client),
        false => Ok(target),
    }
}

/// How long a document fetched from an extension server is used before it is fetched again.
const REFRESH: Duration = Duration::from_secs(60);
/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document read from an extension server.
const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

/// A document fetched from an extension server: when it was last asked for, the last document
/// it gave (kept while it cannot be asked), and whether that asking succeeded.
#[derive(Clone)]
struct Fetched {
    at: Instant,
    doc: Option<Value>,
    fresh: bool,
}

/// Documents fetched from extension servers, by APIService name and path.
static FETCHED: Mutex<Option<HashMap<(String, String), Fetched>>> = Mutex::new(None);

/// The JSON document at `path` on the APIService's server, asked for as `user` at most once
/// every [`REFRESH`]; with whether this is the latest answer (`false`: the last one, or none,
/// while the server cannot be asked).
pub async fn cached(ctx: &Ctx, apiservice: &Value, path: &str, user: &UserInfo) -> (Option<Value>, bool) {
    let key = (apiservice["metadata"]["name"].as_str().unwrap_or_default().to_string(), path.to_string());
    let available = is_available(apiservice);
    let last = FETCHED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).get(&key).cloned();
    if let Some(f) = &last {
        // An APIService that became available is asked at once.
        if f.at.elapsed() < REFRESH && (f.fresh || !available) {
            return (f.doc.clone(), f.fresh);
        }
    }
    let fetched = if available { fetch(ctx, apiservice, path, user).await.ok() } else { None };
    let fresh = fetched.is_some();
    let doc = fetched.or_else(|| last.and_then(|f| f.doc));
    let entry = Fetched { at: Instant::now(), doc: doc.clone(), fresh };
    FETCHED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).insert(key, entry);
    (doc, fresh)
}

async fn fetch(ctx: &Ctx, apiservice: &Value, path: &str, user: &UserInfo) -> Result<Value, String> {
    let target = endpoint(&ctx.store, &ctx.settings, apiservice)?;
    let mut req = http::Request::get(path).header(http::header::ACCEPT, "application/json");
    set_user(req.headers_mut().expect("a fresh builder has headers"), user)?;
    let req = req.body(http_body_util::Full::new(bytes::Bytes::new())).map_err(|e| e.to_string())?;
    let read = async {
        let answer = target.send(req).await.map_err(|e| e.to_string())?;
        if !answer.status().is_success() {
            return Err(format!("status {}", answer.status()));
        }
        let body = http_body_util::Limited::new(answer.into_body(), MAX_DOCUMENT).collect().await.map_err(|e| e.to_string())?.to_bytes();
        serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string())
    };
    tokio::time::timeout(FETCH_TIMEOUT, read).await.map_err(|_| "timed out".to_string())?
}

/// Headers that belong to one connection, never forwarded.
pub const HOP_BY_HOP: &[&str] =
    &["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "transfer-encoding", "te", "trailer", "upgrade", "host"];

/// Sets the user an extension server reads from the request (`X-Remote-User`, `X-Remote-Uid`,
/// one `X-Remote-Group` per group, `X-Remote-Extra-{key}` per extra value with the key
/// percent-encoded), after removing any the client sent and every credential. A name, group or
/// extra value a header cannot carry is an error: the user is passed on whole or not at all.
pub fn set_user(headers: &mut HeaderMap, user: &UserInfo) -> Result<(), String> {
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == "authorization" || k.starts_with("impersonate-") || k.starts_with("x-remote-")
        })
        .cloned()
        .collect();
    for name in dropped {
        headers.remove(name);
    }
    let value = |v: &str| HeaderValue::from_str(v).map_err(|_| "the user's name, groups or extra values cannot be carried in request headers".to_string());
    headers.insert("x-remote-user", value(&user.name)?);
    if !user.uid.is_empty() {
        headers.insert("x-remote-uid", value(&user.uid)?);
    }
    for group in &user.groups {
        headers.append("x-remote-group", value(group)?);
    }
    let extra: &BTreeMap<String, Vec<String>> = &user.extra;
    for (key, values) in extra {
        let name = HeaderName::from_bytes(format!("x-remote-extra-{}", escape_key(key)).as_bytes()).map_err(|e| e.to_string())?;
        for v in values {
            headers.append(name.clone(), value(v)?);
        }
    }
    Ok(())
}

/// An extra key as a header name may carry it: bytes that are not token characters, and `%`,
/// percent-encoded.
fn escape_key(key: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
    key.bytes().map(|b| if token(b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_replaces_credentials_and_forged_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
        headers.insert("impersonate-user", HeaderValue::from_static("root"));
        headers.insert("x-remote-user", HeaderValue::from_static("forged"));
        headers.insert("x-remote-group", HeaderValue::from_static("system:masters"));
        headers.insert("accept", HeaderValue::from_static("application/json"));
        let user = UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: BTreeMap::from([("example.com/team id".to_string(), vec!["a".to_string(), "b".to_string()])]),
        };
        set_user(&mut headers, &user).unwrap();
        assert!(headers.get("authorization").is_none() && headers.get("impersonate-user").is_none());
        assert_eq!(headers["x-remote-user"], "alice");
        assert_eq!(headers["x-remote-uid"], "u-1");
        let groups: Vec<_> = headers.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        assert_eq!(headers.get_all("x-remote-extra-example.com%2Fteam%20id").iter().count(), 2);
        assert_eq!(headers["accept"], "application/json");
        let bad = UserInfo { name: "eve\nX-Remote-Group: system:masters".into(), ..Default::default() };
        assert!(set_user(&mut headers, &bad).is_err());
    }
}

//! The subresources that connect to a pod or node rather than read or write an object:
//! `pods/log`, `exec`, `attach` and `portforward` go to the kubelet of the pod's node, as its
//! `/containerLogs`, `/exec`, `/attach` and `/portForward`; `pods/proxy` goes to the pod's IP,
//! `services/proxy` to one of the Service's endpoints, `nodes/proxy` to the node's kubelet. Answers stream back as they come (a followed log), and
//! a request that upgrades (an exec session over WebSocket or SPDY) is relayed both ways once
//! the other end has agreed to the upgrade. The caller's credentials never leave this server:
//! kubelets see this server's kubelet client certificate.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap, Request, StatusCode};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::context::Ctx;
use crate::status_response::StatusResponse;
use access::request::ResourceRequest;
use machinery::error::{ApiError, ApiResult};
use machinery::query::Params;
use machinery::registry;
use machinery::webhook::Endpoint;

use crate::metrics::LongRunning;

/// The subresources served here.
pub const SUBRESOURCES: &[&str] = &["log", "exec", "attach", "portforward", "proxy"];

/// Headers never sent on: the connection's own, and the caller's credentials.
const NOT_FORWARDED: &[&str] = &["host", "authorization", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "transfer-encoding"];

/// Serves one connect request; `upgrade` is the client's connection, when it asks for one.
/// `lasting` is held for as long as the session lasts (a relayed stream, or the joined
/// connections of an upgrade).
pub async fn serve(
    ctx: &Ctx,
    req: &ResourceRequest,
    params: &Params,
    parts: &http::request::Parts,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
    body: Bytes,
    lasting: LongRunning,
) -> Response {
    match target(ctx, req, params, parts) {
        Ok((endpoint, path)) => relay(&endpoint, &path, parts, upgrade, body, lasting).await,
        Err(e) => e.into_response(),
    }
}

/// Where the request goes: the endpoint and the path (with its query) asked of it.
fn target(ctx: &Ctx, req: &ResourceRequest, params: &Params, parts: &http::request::Parts) -> ApiResult<(Endpoint, String)> {
    let sub = req.subresource.as_deref().unwrap_or_default();
    let query = kubelet_query(parts.uri.query().unwrap_or_default());
    let proxied = || format!("/{}{query}", rest_of(parts.uri.path()));
    let kind = req.info.resource.trim_end_matches('s');
    let (scheme, name, port) = match sub {
        "proxy" => split_scheme_name_port(req.name()).ok_or_else(|| ApiError::bad_request(format!("invalid {kind} request {:?}", req.name())))?,
        _ => ("", req.name(), ""),
    };
    match (req.info.resource, sub) {
        ("nodes", "proxy") => {
            let node = object(ctx, req.info, None, name)?.ok_or_else(|| not_found(req.info, name))?;
            let path = proxied();
            Ok((ctx.settings.kubelet.endpoint(&node, port.parse().ok(), &path)?, path))
        }
        ("pods", "proxy") => {
            let pod = object(ctx, req.info, req.namespace.as_deref(), name)?.ok_or_else(|| not_found(req.info, name))?;
            // Without a port, the first port a container declares.
            let first_declared = || pod["spec"]["containers"].as_array().into_iter().flatten().find_map(|c| c["ports"][0]["containerPort"].as_i64()).map(|p| p.to_string());
            let port = if port.is_empty() { first_declared().unwrap_or_default() } else { port.to_string() };
            let ip = pod["status"]["podIP"].as_str().unwrap_or_default();
            proxy_to(scheme, ip, &port, proxied())
        }
        ("services", "proxy") => {
            let namespace = req.namespace.as_deref().unwrap_or_default();
            let (ip, port) = service_endpoint(ctx, req, namespace, name, port)?;
            proxy_to(scheme, &ip, &port.to_string(), proxied())
        }
        ("pods", _) => {
            let ns = req.namespace.as_deref().unwrap_or_default();
            let pod = object(ctx, req.info, Some(ns), name)?.ok_or_else(|| not_found(req.info, name))?;
            let node_name = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()).ok_or_else(|| ApiError::bad_request(format!("pod {name} does not have a host assigned")))?;
            let nodes = registry::lookup("", "v1", "nodes").expect("nodes are served");
            let node = object(ctx, nodes, None, node_name)?.ok_or_else(|| not_found(nodes, node_name))?;
            let path = match sub {
                "portforward" => format!("/portForward/{ns}/{name}{query}"),
                _ => {
                    let container = container(&pod, params.get("container").unwrap_or_default())?;
                    let kubelet = match sub {
                        "log" => "containerLogs",
                        other => other,
                    };
                    format!("/{kubelet}/{ns}/{name}/{container}{query}")
                }
            };
            Ok((ctx.settings.kubelet.endpoint(&node, None, &path)?, path))
        }
        _ => Err(ApiError::NoRoute),
    }
}

fn not_found(info: &registry::ResourceInfo, name: &str) -> ApiError {
    ApiError::NotFound { group: info.group.into(), resource: info.resource.into(), name: name.into() }
}

/// `[scheme:]name[:port]`, as proxy requests name their target: `name`, `name:port` or
/// `scheme:name:port` (so `https:web` is the port `web` of `https`), the scheme `http`,
/// `https` or empty.
fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && ["", "http", "https"].contains(&scheme)).then_some((scheme, name, port))
}

/// A proxied request to a pod's address: only to a global unicast address (never this host's
/// loopback, a link-local or multicast address), as kube-apiserver allows.
fn proxy_to(scheme: &str, ip: &str, port: &str, path: String) -> ApiResult<(Endpoint, String)> {
    let addr: std::net::IpAddr = ip.parse().ok().filter(global_unicast).ok_or_else(|| ApiError::bad_request("address not allowed"))?;
    let host = if addr.is_ipv6() { format!("[{addr}]") } else { addr.to_string() };
    let authority = if port.is_empty() { host } else { format!("{host}:{port}") };
    let scheme = if scheme.is_empty() { "http" } else { scheme };
    let endpoint = Endpoint::new(&format!("{scheme}://{authority}{path}"), None, None, None, None).map_err(ApiError::internal)?;
    Ok((endpoint.without_verification(None).map_err(ApiError::internal)?, path))
}

/// Go's `IP.IsGlobalUnicast`.
fn global_unicast(ip: &std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_loopback() || v4.is_multicast() || v4.is_link_local() || v4.is_broadcast()),
        std::net::IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || v6.is_unicast_link_local()),
    }
}

/// The address and port a Service's proxy reaches: one of its Endpoints' ready addresses that
/// carries the asked port (by name, or the Service port's number) and is a pod of the
/// namespace with that IP, tried from a random place, as kube-apiserver picks.
fn service_endpoint(ctx: &Ctx, req: &ResourceRequest, namespace: &str, name: &str, port: &str) -> ApiResult<(String, i64)> {
    let mut port_name = port.to_string();
    if let Ok(number) = port.parse::<i64>() {
        let service = object(ctx, req.info, Some(namespace), name)?.ok_or_else(|| not_found(req.info, name))?;
        let ports = service["spec"]["ports"].as_array().into_iter().flatten();
        port_name = ports.filter(|p| p["port"].as_i64() == Some(number)).find_map(|p| Some(p["name"].as_str().unwrap_or_default().to_string()))
            .ok_or_else(|| ApiError::Unavailable(format!("no service port {number} found for service {name:?}")))?;
    }
    let endpoints_info = registry::lookup("", "v1", "endpoints").expect("endpoints are served");
    let endpoints = object(ctx, endpoints_info, Some(namespace), name)?.ok_or_else(|| not_found(endpoints_info, name))?;
    let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
    if subsets.is_empty() {
        return Err(ApiError::Unavailable(format!("no endpoints available for service {name:?}")));
    }
    let pods = registry::lookup("", "v1", "pods").expect("pods are served");
    let is_pod_address = |address: &Value| -> bool {
        let target = &address["targetRef"];
        if target.is_null() || target["namespace"].as_str() != Some(namespace) {
            return false;
        }
        let Ok(Some(pod)) = object(ctx, pods, Some(namespace), target["name"].as_str().unwrap_or_default()) else { return false };
        pod["status"]["podIPs"].as_array().into_iter().flatten().any(|p| p["ip"] == address["ip"])
    };
    let start = rand::random_range(0..subsets.len());
    for subset in subsets.iter().cycle().skip(start).take(subsets.len()) {
        let addresses = subset["addresses"].as_array().cloned().unwrap_or_default();
        if addresses.is_empty() {
            continue;
        }
        for p in subset["ports"].as_array().into_iter().flatten().filter(|p| p["name"].as_str().unwrap_or_default() == port_name) {
            let first = rand::random_range(0..addresses.len());
            if let Some(address) = addresses.iter().cycle().skip(first).take(addresses.len()).find(|a| is_pod_address(a)) {
                return Ok((address["ip"].as_str().unwrap_or_default().to_string(), p["port"].as_i64().unwrap_or_default()));
            }
        }
    }
    Err(ApiError::Unavailable(format!("no endpoints available for service {:?}", req.name())))
}

/// The query a kubelet is asked with: the caller's, but for the container (named in the path).
fn kubelet_query(query: &str) -> String {
    let kept: Vec<&str> = query.split('&').filter(|p| !p.is_empty() && !p.starts_with("container=")).collect();
    if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    }
}

/// The path after `/proxy/` in a proxy request (empty for the root).
fn rest_of(path: &str) -> &str {
    path.split_once("/proxy/").map_or("", |(_, rest)| rest)
}

fn object(ctx: &Ctx, info: &registry::ResourceInfo, namespace: Option<&str>, name: &str) -> ApiResult<Option<Value>> {
    let Some(stored) = ctx.store.cache().get(&info.key(namespace, name), None)? else { return Ok(None) };
    Ok(Some(super::write::parse(&stored)?))
}

/// The container a request names, or the pod's only one; Kubernetes' words otherwise.
fn container<'a>(pod: &'a Value, asked: &'a str) -> ApiResult<&'a str> {
    let names = |list: &str| -> Vec<&str> { pod["spec"][list].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect() };
    let (containers, init, ephemeral) = (names("containers"), names("initContainers"), names("ephemeralContainers"));
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    if asked.is_empty() {
        if let [only] = containers.as_slice() {
            return Ok(only);
        }
        let mut message = format!("a container name must be specified for pod {pod_name}, choose one of: [{}]", containers.join(" "));
        if !init.is_empty() {
            message.push_str(&format!(" or one of the init containers: [{}]", init.join(" ")));
        }
        if !ephemeral.is_empty() {
            message.push_str(&format!(" or one of the ephemeral containers: [{}]", ephemeral.join(" ")));
        }
        return Err(ApiError::bad_request(message));
    }
    if containers.contains(&asked) || init.contains(&asked) || ephemeral.contains(&asked) {
        Ok(asked)
    } else {
        Err(ApiError::bad_request(format!("container {asked} is not valid for pod {pod_name}")))
    }
}

/// Sends the request on and relays the answer; an agreed upgrade joins the two connections.
async fn relay(endpoint: &Endpoint, path: &str, parts: &http::request::Parts, upgrade: Option<hyper::upgrade::OnUpgrade>, body: Bytes, lasting: LongRunning) -> Response {
    let mut request = Request::builder().method(parts.method.clone()).uri(path);
    let headers = request.headers_mut().expect("a fresh builder has headers");
    copy_headers(&parts.headers, headers);
    let Ok(request) = request.body(Full::new(body)) else {
        return ApiError::bad_request("the request cannot be forwarded").into_response();
    };
    let upgrade = upgrade.filter(|_| parts.headers.contains_key(header::UPGRADE));
    let mut answer = match endpoint.send(request).await {
        Ok(a) => a,
        Err(e) => return ApiError::Unavailable(format!("error dialing backend: {e}")).into_response(),
    };
    if let (StatusCode::SWITCHING_PROTOCOLS, Some(client)) = (answer.status(), upgrade) {
        let backend = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            join(client, backend).await;
            drop(lasting);
        });
        let mut switched = Response::new(Body::empty());
        *switched.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        *switched.headers_mut() = answer.headers().clone();
        return switched;
    }
    let (mut head, incoming) = answer.into_parts();
    for name in NOT_FORWARDED {
        head.headers.remove(*name);
    }
    Response::from_parts(head, crate::body::holding(Body::new(incoming), lasting))
}

/// The caller's headers, but for the connection's own (an upgrade's are kept) and credentials.
fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        let n = name.as_str();
        if !NOT_FORWARDED.contains(&n) && !n.starts_with("impersonate-") {
            to.append(name.clone(), value.clone());
        }
    }
}

/// Joins an upgraded client connection to the upgraded backend connection until either closes.
async fn join(client: hyper::upgrade::OnUpgrade, backend: hyper::upgrade::OnUpgrade) {
    let (Ok(client), Ok(backend)) = (client.await, backend.await) else { return };
    let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
    let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
}

//! `/livez`, `/readyz` and `/healthz`: named checks, `?verbose`, `?exclude=`, and single checks
//! at `/{endpoint}/{check}`.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use crate::context::Ctx;
use crate::hooks;
use machinery::query::Params;

/// Readiness fails when the node is this far behind its leader's commit index.
const MAX_LAG: u64 = 1000;

/// This node has caught up with the commit once, so the definitions it serves are those of the
/// cluster.
static CRDS_SYNCED: AtomicBool = AtomicBool::new(false);

/// The checks of an endpoint, named as kube-apiserver names the check for the same thing.
fn checks(ctx: &Ctx, endpoint: &str) -> Vec<(String, bool)> {
    let mut out = vec![("ping".to_string(), true), ("log".to_string(), true)];
    let (committed, applied) = ctx.store.progress();
    let caught_up = committed.saturating_sub(applied) <= MAX_LAG;
    if endpoint == "readyz" {
        // The watch cache, which serves reads, is close behind the commit.
        out.push(("informer-sync".into(), caught_up));
    }
    // The store: a Raft group with a leader (liveness does not wait for one), and for readiness
    // a log that can grow (a node short of space refuses writes; balancers should go elsewhere).
    let store_ready = match endpoint {
        "livez" => true,
        "readyz" => ctx.store.has_leader() && ctx.store.space_shortage().is_none(),
        _ => ctx.store.has_leader(),
    };
    out.push(("etcd".into(), store_ready));
    // Admission and the watch cache exist before the server serves.
    out.push(("poststarthook/start-apiserver-admission-initializer".into(), true));
    out.push(("poststarthook/generic-apiserver-start-informers".into(), true));
    // Definitions are followed as they are applied, and their controller runs on the leader,
    // from the start; the served custom resources are synced once this node has caught up with
    // the commit, and stay so.
    out.push(("poststarthook/start-apiextensions-informers".into(), true));
    out.push(("poststarthook/start-apiextensions-controllers".into(), true));
    if caught_up {
        CRDS_SYNCED.store(true, Ordering::Relaxed);
    }
    out.push(("poststarthook/crd-informer-synced".into(), CRDS_SYNCED.load(Ordering::Relaxed)));
    // Behind its gate, as in Kubernetes: storage is ready once the watch cache, which serves
    // every resource, has caught up with the commit.
    if machinery::features::enabled(machinery::features::STORAGE_READINESS_GATE) {
        out.push(("poststarthook/storage-readiness".into(), CRDS_SYNCED.load(Ordering::Relaxed)));
    }
    let hooks = &ctx.settings.hooks;
    out.extend(hooks::HOOKS.iter().map(|h| (format!("poststarthook/{h}"), hooks.is_done(h))));
    // The Service IP repair runs from the start, acting on the leader (`ip_repair.rs`).
    out.push(("poststarthook/start-service-ip-repair-controllers".into(), true));
    // Local APIServices are registered and marked available by the autoregistration hook.
    let registered = hooks.is_done("kube-apiserver-autoregistration");
    out.push(("poststarthook/apiservice-registration-controller".into(), registered));
    out.push(("poststarthook/apiservice-status-local-available-controller".into(), registered));
    out.push(("autoregister-completion".into(), registered));
    // The aggregation layer (`aggregator/`) reads APIServices from the watch cache, its
    // availability controller runs on the leader from the start, and extension servers' OpenAPI
    // is merged when the document is asked for.
    out.push(("poststarthook/start-kube-aggregator-informers".into(), true));
    out.push(("poststarthook/apiservice-status-remote-available-controller".into(), true));
    out.push(("poststarthook/apiservice-openapi-controller".into(), true));
    if endpoint == "readyz" {
        out.push(("shutdown".into(), !ctx.settings.shutting_down()));
    }
    out
}

/// Answers `/{endpoint}` (`livez`, `readyz`, `healthz`) and `/{endpoint}/{check}`.
pub fn serve(ctx: &Ctx, endpoint: &str, check: Option<&str>, params: &Params) -> Response {
    let all = checks(ctx, endpoint);
    if let Some(name) = check {
        return match all.iter().find(|(n, _)| n == name) {
            Some((_, true)) => text(StatusCode::OK, "ok".into()),
            Some((n, false)) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("internal server error: {n} check failed\n")),
            None => text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
        };
    }
    let excluded: Vec<&str> = params.all("exclude");
    let verbose = params.get("verbose").is_some();
    let mut body = String::new();
    let mut healthy = true;
    for (name, ok) in &all {
        if excluded.contains(&name.as_str()) {
            body.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        healthy &= *ok;
        if *ok {
            body.push_str(&format!("[+]{name} ok\n"));
        } else {
            body.push_str(&format!("[-]{name} failed: reason withheld\n"));
        }
    }
    for name in excluded.iter().filter(|e| !all.iter().any(|(n, _)| n == *e)) {
        body.push_str(&format!("warn: some health checks cannot be excluded: no matches for \"{name}\"\n"));
    }
    if healthy {
        if verbose {
            body.push_str(&format!("{endpoint} check passed\n"));
            text(StatusCode::OK, body)
        } else {
            text(StatusCode::OK, "ok".into())
        }
    } else {
        body.push_str(&format!("{endpoint} check failed\n"));
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

/// A plain-text answer, as Go's `http.Error` writes one (health checks, and what the aggregation
/// layer answers for an extension server).
pub(crate) fn text(code: StatusCode, body: String) -> Response {
    let mut resp = (code, body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}

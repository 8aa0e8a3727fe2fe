//! `componentstatuses`: the health of this server's own parts, computed when asked, never
//! stored. The store (the Raft group, which stands where etcd stands) is `etcd-0`, healthy while
//! this replica knows a leader; the controllers this server runs in place of
//! kube-controller-manager are `controller-manager`, healthy once its post-start hooks are done.

use http::StatusCode;
use serde_json::{json, Value};

use super::reply::{ListReply, Reply};
use crate::context::Ctx;
use machinery::error::ApiResult;
use access::request::ResourceRequest;

fn component(name: &str, healthy: bool, message: &str, error: &str) -> Value {
    let mut condition = json!({"type": "Healthy", "status": if healthy { "True" } else { "False" }, "message": message});
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name}, "conditions": [condition]})
}

fn all(ctx: &Ctx) -> Vec<Value> {
    let store_ok = ctx.store.has_leader();
    let hooks_ok = ctx.settings.hooks.all_done();
    vec![
        component("controller-manager", hooks_ok, if hooks_ok { "ok" } else { "" }, if hooks_ok { "" } else { "post-start hooks not done" }),
        component("etcd-0", store_ok, if store_ok { "ok" } else { "" }, if store_ok { "" } else { "no Raft leader" }),
    ]
}

pub fn get(ctx: &Ctx, req: &ResourceRequest) -> ApiResult<Reply> {
    let found = all(ctx).into_iter().find(|c| c["metadata"]["name"] == req.name()).ok_or_else(|| req.not_found())?;
    Ok(Reply::value(StatusCode::OK, &found))
}

pub fn list(ctx: &Ctx) -> ApiResult<Reply> {
    let items = all(ctx).iter().map(|c| serde_json::to_vec(c).unwrap_or_default().into()).collect();
    Ok(Reply::List(ListReply { rev: ctx.store.cache().applied(), continue_token: None, remaining: None, items }))
}

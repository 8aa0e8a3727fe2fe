//! The update and patch verbs: both compute a new object from the current one and go through
//! the guaranteed-update loop; subresources decide which part of the object may change.

use serde_json::Value;

use super::certificates;
use machinery::prepare::{check_type_meta, FieldValidation};
use super::reply::Reply;
use super::scale;
use super::write::{self, Update};
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult};
use machinery::fieldmanager::{self, Manager};
use machinery::meta::meta_str;
use machinery::patch::{self, PatchKind};
use machinery::query::Params;
use access::request::ResourceRequest;

/// The new object of an update of `sub` (none, `status`, `scale`, a pod's part, ...): `body` is what the client
/// sent for that view, `old` the current object.
fn merge_view(req: &ResourceRequest, old: &Value, body: &Value) -> ApiResult<Value> {
    match req.subresource.as_deref() {
        None => {
            let mut new = body.clone();
            // A namespace's finalizers change only through `finalize`.
            if (req.info.group, req.info.resource) == ("", "namespaces") {
                match old["spec"].get("finalizers") {
                    Some(f) => new["spec"]["finalizers"] = f.clone(),
                    None => {
                        new.get_mut("spec").and_then(Value::as_object_mut).map(|s| s.remove("finalizers"));
                    }
                }
            }
            if req.info.has_subresource("status") {
                // The main resource does not change status.
                match old.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        new.as_object_mut().map(|o| o.remove("status"));
                    }
                }
            }
            Ok(new)
        }
        Some("status") => {
            let mut new = status_update(req, old, body);
            if (req.info.group, req.info.kind) == ("certificates.k8s.io", "CertificateSigningRequest") {
                certificates::status(old, &mut new)?;
            }
            Ok(new)
        }
        Some("approval") => certificates::approval(old, body),
        // A namespace's finalizers change through `finalize`, which keeps its status.
        Some("finalize") => {
            let mut new = body.clone();
            match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    new.as_object_mut().map(|o| o.remove("status"));
                }
            }
            Ok(new)
        }
        Some("scale") => scale::apply_to(req.info, old, body),
        // Taken as sent: the part is taken from it after mutating admission (see `write::update`).
        Some("ephemeralcontainers" | "resize") => Ok(body.clone()),
        Some(other) => Err(ApiError::bad_request(format!("unsupported subresource {other}"))),
    }
}

/// The new object of a status update, as Kubernetes' status strategies make it: the status and
/// the metadata (labels, annotations) the client sent, every other part (spec, data) as stored.
/// Deployments keep their stored labels and pods their owners, as in Kubernetes.
fn status_update(req: &ResourceRequest, old: &Value, body: &Value) -> Value {
    let mut new = body.clone();
    let Some(map) = new.as_object_mut() else { return old.clone() };
    let own = |k: &str| matches!(k, "metadata" | "status" | "apiVersion" | "kind");
    map.retain(|k, _| own(k));
    if let Some(old_map) = old.as_object() {
        for (k, v) in old_map.iter().filter(|(k, _)| !own(k)) {
            map.insert(k.clone(), v.clone());
        }
    }
    let keep = match (req.info.group, req.info.kind) {
        ("apps", "Deployment") => Some("labels"),
        ("", "Pod") => Some("ownerReferences"),
        _ => None,
    };
    if let Some(field) = keep {
        match old["metadata"].get(field) {
            Some(v) => new["metadata"][field] = v.clone(),
            None => {
                new["metadata"].as_object_mut().map(|m| m.remove(field));
            }
        }
    }
    new
}

/// The view of the object a subresource exposes to clients.
fn view(req: &ResourceRequest, obj: &Value) -> ApiResult<Value> {
    match req.subresource.as_deref() {
        Some("scale") => scale::from_object(req.info, obj),
        _ => Ok(obj.clone()),
    }
}

fn precondition(obj: &Value) -> ApiResult<Option<u64>> {
    match meta_str(obj, "resourceVersion").filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(rv) => rv.parse().map(Some).map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}"))),
    }
}

/// PUT: replace the object (or its status or scale).
pub async fn update(ctx: &Ctx, req: &ResourceRequest, params: &Params, mut body: Value, duplicates: Vec<String>, manager: Manager, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let (kind, api_version) = match req.subresource.as_deref() {
        Some("scale") => ("Scale", "autoscaling/v1".to_string()),
        _ => (req.info.kind, req.info.api_version()),
    };
    check_type_meta(req.info, &mut body, kind, &api_version)?;
    match meta_str(&body, "name") {
        Some(n) if n == req.name() => {}
        Some(n) if !n.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({})",
                req.name()
            )))
        }
        _ => return Err(ApiError::bad_request("name is required")),
    }
    if let (Some(ns), Some(given)) = (req.namespace.as_deref(), meta_str(&body, "namespace")) {
        if !given.is_empty() && given != ns {
            return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
    }
    let opts = Update {
        precondition: precondition(&body)?,
        validation: FieldValidation::from_params(params)?,
        duplicates,
        dry_run: params.dry_run()?,
        manager: Some(manager),
    };
    let reply = write::update(ctx, req, opts, warnings, |old| merge_view(req, old, &body)).await?;
    scale_reply(req, reply)
}

/// PATCH: apply a merge, JSON or strategic merge patch to the current object (or its view),
/// or a server-side apply ([`apply`]).
pub async fn patch(ctx: &Ctx, req: &ResourceRequest, params: &Params, kind: PatchKind, body: &[u8], manager: Manager, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    if kind == PatchKind::Apply {
        return apply(ctx, req, params, body, manager, warnings).await;
    }
    let opts = Update { precondition: None, validation: FieldValidation::from_params(params)?, duplicates: Vec::new(), dry_run: params.dry_run()?, manager: Some(manager) };
    let reply = write::update(ctx, req, opts, warnings, |old| {
        let current = view(req, old)?;
        let patched = patch::apply(kind, &current, body)?;
        check_patched(req, &current, &patched)?;
        merge_view(req, old, &patched)
    })
    .await?;
    scale_reply(req, reply)
}

/// What a patch may not change: the revision it read (a precondition) and the name.
fn check_patched(req: &ResourceRequest, current: &Value, patched: &Value) -> ApiResult<()> {
    let rv = precondition(patched)?;
    if rv.is_some() && rv != precondition(current)? {
        return Err(ApiError::Conflict {
            group: req.info.group.into(),
            resource: req.info.resource.into(),
            name: req.name().into(),
            message: format!("Operation cannot be fulfilled on {} \"{}\": {}", req.info.resource, req.name(), write::MODIFIED),
        });
    }
    if meta_str(patched, "name").is_some_and(|n| n != req.name()) {
        return Err(ApiError::bad_request("metadata.name: Invalid value: the name of the object does not match the name on the URL"));
    }
    if req.info.namespaced && meta_str(patched, "namespace").is_some_and(|n| !n.is_empty() && Some(n) != req.namespace.as_deref()) {
        return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
    }
    Ok(())
}

/// Server-side apply (`application/apply-patch+yaml`): the applied configuration merged into
/// the object by field management ([`fieldmanager::apply`]), conflicts refused unless `force`;
/// an object that does not exist is created from it.
async fn apply(ctx: &Ctx, req: &ResourceRequest, params: &Params, body: &[u8], manager: Manager, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let mut applied = machinery::yaml::decode(body, |e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !applied.is_object() {
        return Err(ApiError::bad_request("the applied configuration must be an object"));
    }
    if applied["metadata"].get("managedFields").is_some() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    // An applied configuration names its type: Kubernetes reads it by it.
    let text = |k: &str| applied[k].as_str().unwrap_or_default().to_string();
    if text("apiVersion").is_empty() || text("kind").is_empty() {
        let api_version = text("apiVersion");
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        return Err(ApiError::bad_request(format!("invalid object type: {group}/{version}, Kind={}", text("kind"))));
    }
    check_type_meta(req.info, &mut applied, req.info.kind, &req.info.api_version())?;
    let force = params.flag("force")?;
    let validation = FieldValidation::from_params(params)?;
    if validation == FieldValidation::Strict {
        strict_apply(req, body, &applied)?;
    }
    let dry_run = params.dry_run()?;
    let def = req.info.schema_definition();
    let def = def.as_ref();
    let now = machinery::meta::now();
    let opts = Update { precondition: None, validation, duplicates: Vec::new(), dry_run, manager: None };
    let result = write::update(ctx, req, opts, warnings, |old| {
        let current = view(req, old)?;
        let merged = fieldmanager::apply(Some(&current), &applied, &manager, force, def, &now)?;
        check_patched(req, &current, &merged)?;
        merge_view(req, old, &merged)
    })
    .await;
    match result {
        Err(ApiError::NotFound { .. }) if req.subresource.is_none() => {
            if meta_str(&applied, "name").is_some_and(|n| n != req.name()) {
                return Err(ApiError::bad_request("metadata.name: Invalid value: the name of the object does not match the name on the URL"));
            }
            applied["metadata"]["name"] = Value::String(req.name().to_string());
            let created = fieldmanager::apply(None, &applied, &manager, force, def, &now)?;
            write::create(ctx, req, created, write::Create { validation, duplicates: &[], dry_run, manager: None }, warnings).await
        }
        other => scale_reply(req, other?),
    }
}

/// What Kubernetes refuses in an applied configuration under `fieldValidation=Strict`: a key
/// the YAML repeats, and (for a custom resource, whose configuration becomes a typed object of
/// its schema) a field the schema does not declare.
fn strict_apply(req: &ResourceRequest, body: &[u8], applied: &Value) -> ApiResult<()> {
    if let Err(e) = serde_yaml::from_slice::<serde_yaml::Value>(body) {
        let message = e.to_string();
        if let Some(key) = message.split_once("duplicate entry with key ").and_then(|(_, m)| m.split(" at line ").next()) {
            let line = duplicate_line(body, e.location().map_or(1, |l| l.line()), key.trim_matches('"'));
            return Err(ApiError::bad_request(format!(
                "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line {line}: key {key} already set in map"
            )));
        }
    }
    if machinery::registry::custom::is_custom(req.info) {
        let unknown = (req.info.ops.decode)(req.info, applied.clone()).map_err(ApiError::BadRequest)?.unknown_fields;
        if !unknown.is_empty() {
            let fields: Vec<String> = unknown.iter().map(|f| format!(".{f}: field not declared in schema")).collect();
            return Err(ApiError::bad_request(format!(
                "failed to create typed patch object ({}, Kind={}): {}",
                req.info.api_version(),
                req.info.kind,
                fields.join("\n")
            )));
        }
    }
    Ok(())
}

/// The line of the second `key:` in the YAML mapping that starts on line `start` (where the YAML
/// parser reports a duplicate), as Kubernetes names it.
fn duplicate_line(body: &[u8], start: usize, key: &str) -> usize {
    let text = String::from_utf8_lossy(body);
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(first) = lines.get(start.saturating_sub(1)) else { return start };
    let depth = indent(first);
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate().skip(start.saturating_sub(1)) {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) < depth {
            break;
        }
        let t = l.trim_start();
        if indent(l) == depth && (t.starts_with(&format!("{key}:")) || t.starts_with(&format!("\"{key}\":"))) {
            seen += 1;
            if seen == 2 {
                return i + 1;
            }
        }
    }
    start
}

/// Answers with the `Scale` view when the scale subresource was written.
fn scale_reply(req: &ResourceRequest, reply: Reply) -> ApiResult<Reply> {
    match (req.subresource.as_deref(), reply) {
        (Some("scale"), Reply::Object { code, data }) => {
            let obj: Value = serde_json::from_slice(&data).map_err(ApiError::internal)?;
            Ok(Reply::value(code, &scale::from_object(req.info, &obj)?))
        }
        (_, reply) => Ok(reply),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_duplicate_key_is_named_by_its_own_line() {
        let body = b"\napiVersion: v1\nkind: X\nmetadata:\n  name: a\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  bar: 1\n";
        let e = serde_yaml::from_slice::<serde_yaml::Value>(body).unwrap_err();
        assert_eq!(super::duplicate_line(body, e.location().unwrap().line(), "foo"), 9);
    }
}

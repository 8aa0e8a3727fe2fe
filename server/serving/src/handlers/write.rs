//! The write verbs against storage: create, the guaranteed-update loop shared by update and
//! patch, and delete (whose finalizers are in `finalizers.rs`). Each mutation is one
//! compare-and-set transaction through Raft.

use bytes::Bytes;
use http::StatusCode;
use raft_store::{Action, Cond, Object, Op, Txn, TxnResult};
use serde_json::{json, Value};

use super::finalizers::{self, finalizers_empty};
use machinery::delete_options::DeleteOptions;
use machinery::prepare::{self, FieldValidation};
use admission::Operation;
use super::reply::Reply;
use crate::context::Ctx;
use machinery::fieldmanager::{self, Manager};
use machinery::error::{ApiError, ApiResult};
use crate::ipalloc::ServiceIps;
use crate::nodeports;
use machinery::meta::{self, meta_mut, meta_str};
use machinery::registry::{convert, custom, ResourceInfo};
use access::request::ResourceRequest;

/// How many times a write retries after losing a compare-and-set race.
const MAX_RETRIES: usize = 16;

pub fn parse(obj: &Object) -> ApiResult<Value> {
    serde_json::from_slice(&obj.data).map_err(ApiError::internal)
}

fn to_bytes(v: &Value) -> ApiResult<Bytes> {
    serde_json::to_vec(v).map(Bytes::from).map_err(ApiError::internal)
}

fn conflict(req: &ResourceRequest, detail: &str) -> ApiError {
    ApiError::Conflict {
        group: req.info.group.to_string(),
        resource: req.info.resource.to_string(),
        name: req.name().to_string(),
        message: format!(
            "Operation cannot be fulfilled on {}{} \"{}\": {detail}",
            req.info.resource,
            if req.info.group.is_empty() { String::new() } else { format!(".{}", req.info.group) },
            req.name()
        ),
    }
}

pub const MODIFIED: &str = "the object has been modified; please apply your changes to the latest version and try again";

/// What `key` holds, for a write that depends on it. The local cache answers when it holds an
/// object `settled` accepts; otherwise (nothing, or not what the caller expected) this replica
/// may only be behind, so the cache is read again after a quorum read (as Kubernetes re-reads
/// storage before answering from a cached object that did not match).
async fn read_settled(ctx: &Ctx, key: &str, settled: impl Fn(&Object) -> bool) -> ApiResult<Option<Object>> {
    let cache = ctx.store.cache();
    if let Some(o) = cache.get(key, None)?.filter(|o| settled(o)) {
        return Ok(Some(o));
    }
    ctx.store.linearizable_rev().await?;
    Ok(cache.get(key, None)?)
}

/// An object entering deletion moves to its next generation, when it has generations.
fn bump_generation(metadata: &mut serde_json::Map<String, Value>) {
    if let Some(generation) = metadata.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
        metadata.insert("generation".into(), json!(generation + 1));
    }
}

/// How a create checks and records what it writes.
pub struct Create<'a> {
    pub validation: FieldValidation,
    /// Keys the request body repeated, reported per `validation`.
    pub duplicates: &'a [String],
    pub dry_run: bool,
    /// Who writes, for `managedFields` (`None`: a server-side apply, which recorded them).
    pub manager: Option<&'a Manager>,
}

/// Creates an object from a request body that passed type checks.
pub async fn create(ctx: &Ctx, req: &ResourceRequest, mut obj: Value, opts: Create<'_>, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let Create { validation, duplicates, dry_run, manager } = opts;
    let info = req.info;
    if custom::version(info).is_some_and(|v| v.terminating) {
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        return Err(ApiError::forbidden(info.group, info.resource, &name, "create not allowed while custom resource definition is terminating"));
    }
    {
        let m = meta_mut(&mut obj);
        if m.get("resourceVersion").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(ApiError::bad_request("resourceVersion should not be set on objects to be created"));
        }
        if info.namespaced {
            let ns = req.namespace.clone().unwrap_or_default();
            match m.get("namespace").and_then(Value::as_str) {
                Some(given) if !given.is_empty() && given != ns => {
                    return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
                }
                _ => {
                    m.insert("namespace".into(), json!(ns));
                }
            }
        } else {
            m.remove("namespace");
        }
        let name_empty = m.get("name").and_then(Value::as_str).is_none_or(str::is_empty);
        if let Some(gen) = m.get("generateName").and_then(Value::as_str).filter(|g| name_empty && !g.is_empty()) {
            let base: String = gen.chars().take(58).collect();
            m.insert("name".into(), json!(format!("{base}{}", meta::name_suffix())));
        }
    }
    if info.has_subresource("status") && !info.ops.strategy.keeps_status {
        match (info.ops.strategy.initial_status, obj.as_object_mut()) {
            (Some(initial), Some(o)) => o.insert("status".into(), initial()),
            (None, Some(o)) => o.remove("status"),
            _ => None,
        };
    }
    // The server's metadata first: defaults may use it (a Job's generated selector its uid).
    meta::stamp_create(info, &mut obj);
    let mut obj = prepare::decode(info, obj, validation, duplicates, warnings)?;
    if (info.group, info.kind) == ("certificates.k8s.io", "CertificateSigningRequest") {
        super::certificates::stamp_requestor(&mut obj, &req.user);
    }
    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
    let named = ResourceRequest { name: Some(name.clone()), ..req.clone() };
    // Kubernetes' order: mutating admission, then what the kind derives, then validation, then
    // validating admission.
    warnings.extend(ctx.writes.admission.mutate(&named, Operation::Create, &mut obj, None, dry_run).await?);
    if let Some(prepare) = info.ops.strategy.prepare_create {
        prepare(&mut obj);
    }
    prepare::validate(info, &obj, None)?;
    if let Some(warn) = info.ops.strategy.warnings {
        warnings.extend(warn(&obj, None));
    }
    warnings.extend(ctx.writes.admission.validate(&named, Operation::Create, Some(&mut obj), None, dry_run).await?);
    // A mutating plugin may not rename the object.
    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
    let key = info.key(req.namespace.as_deref(), &name);
    if let Some(m) = manager {
        fieldmanager::update(None, &mut obj, m, &info.schema_definition(), &meta::now());
    }
    let wants_ip = is_service(info) && service_wants_ip(&obj);
    let requested_ip = obj["spec"]["clusterIP"].as_str().filter(|s| !s.is_empty() && *s != "None").map(str::to_string);
    let ranges = if wants_ip { ctx.writes.ips.ranges(&ctx.store) } else { Vec::new() };
    if let Some(ip) = &requested_ip {
        ServiceIps::check(&ranges, ip).map_err(|cause| ApiError::Invalid { group: String::new(), kind: "Service".into(), name: name.clone(), causes: vec![cause] })?;
    }
    let service = is_service(info);
    // Ports given a node port by an earlier try, which lost it to another Service, choose again.
    let unset_node_ports: Vec<usize> = match service {
        true => obj["spec"]["ports"].as_array().into_iter().flatten().enumerate().filter(|(_, p)| p["nodePort"].is_null()).map(|(i, _)| i).collect(),
        false => Vec::new(),
    };
    for _ in 0..MAX_RETRIES {
        let mut ops = Vec::new();
        if wants_ip {
            let ip = match &requested_ip {
                Some(ip) => ip.clone(),
                None => {
                    let cache = ctx.store.cache();
                    ServiceIps::candidate(&ranges, &|ip| cache.get(&ServiceIps::key(ip), None).ok().flatten().is_some())?
                }
            };
            obj["spec"]["clusterIP"] = json!(ip);
            obj["spec"]["clusterIPs"] = json!([ip]);
            let reservation = ServiceIps::reservation(&ip, req.namespace.as_deref().unwrap_or_default(), &name);
            ops.push(Op { key: ServiceIps::key(&ip), cond: Cond::Absent, action: Action::Put(to_bytes(&reservation)?) });
        }
        if service {
            for i in &unset_node_ports {
                obj["spec"]["ports"][*i].as_object_mut().map(|p| p.remove("nodePort"));
            }
            let namespace = req.namespace.as_deref().unwrap_or_default();
            ops.extend(ctx.writes.node_ports.plan(ctx.store.cache(), None, &mut obj, namespace, &name)?.take);
        }
        if dry_run {
            return Ok(Reply::value(StatusCode::CREATED, &obj));
        }
        // Kept for a retry with another IP (and the answer): encoded as it is when stored as served.
        let data = match convert::stored_as_served(info) {
            true => to_bytes(&obj)?,
            false => to_bytes(&convert::to_storage(&ctx.store, info, obj.clone()).await?)?,
        };
        // Fault injection: `create-corrupt=return(NAME)` stores the object named NAME as bytes
        // that cannot be decoded, as a damaged disk or a lost encryption key would leave it.
        #[cfg(feature = "failpoints")]
        if fail::eval("create-corrupt", |arg| arg.is_some_and(|n| n == name)).unwrap_or(false) {
            let corrupt = Bytes::copy_from_slice(&data[..data.len() / 2]);
            ops.insert(0, Op { key: key.clone(), cond: Cond::Absent, action: Action::Put(corrupt) });
            super::commit(ctx, Txn::new(ops)).await?;
            return Ok(Reply::value(StatusCode::CREATED, &obj));
        }
        ops.insert(0, Op { key: key.clone(), cond: Cond::Absent, action: Action::Put(data) });
        match super::commit(ctx, Txn::new(ops)).await? {
            TxnResult::Ok { objects, .. } => {
                let stored = objects.into_iter().next().flatten().ok_or_else(|| ApiError::internal("no object stored"))?;
                return Ok(Reply::object(StatusCode::CREATED, convert::read_form(&ctx.store, info, stored.data).await?));
            }
            TxnResult::Failed { op: 0, .. } => {
                return Err(ApiError::AlreadyExists {
                    group: info.group.into(),
                    resource: info.resource.into(),
                    name: named.name().into(),
                })
            }
            // The requested IP's reservation (op 1) is held by another Service.
            TxnResult::Failed { op: 1, .. } if requested_ip.is_some() => {
                return Err(ApiError::Invalid {
                    group: String::new(),
                    kind: "Service".into(),
                    name,
                    causes: vec![machinery::error::Cause::invalid(
                        "spec.clusterIPs",
                        requested_ip.unwrap_or_default(),
                        "failed to allocate IP: provided IP is already allocated",
                    )],
                })
            }
            TxnResult::Failed { .. } => continue,
            TxnResult::None => return Err(ApiError::internal("unexpected entry result")),
        }
    }
    Err(ApiError::Unavailable("could not allocate a service IP".into()))
}

/// Whether `info` is the core group's Services, whose writes allocate IPs and node ports.
fn is_service(info: &ResourceInfo) -> bool {
    info.resource == "services" && info.group.is_empty()
}

fn service_wants_ip(obj: &Value) -> bool {
    let spec = &obj["spec"];
    spec["type"].as_str() != Some("ExternalName") && spec["clusterIP"].as_str() != Some("None")
}

/// The current object for an update or delete, 404 without one. A local object older than the
/// revision the client expects may only be stale; one at or past it is current enough (a newer
/// revision is a conflict wherever it is read).
async fn current(ctx: &Ctx, req: &ResourceRequest, key: &str, expect: Option<u64>) -> ApiResult<Object> {
    read_settled(ctx, key, |o| expect.is_none_or(|rv| o.rev >= rv)).await?.ok_or_else(|| req.not_found())
}

/// The answer to a compare-and-set that lost to another write, when the client pinned the
/// revision: 404 if the object is gone, 409 otherwise.
fn lost(req: &ResourceRequest, current: Option<Object>) -> ApiError {
    match current {
        None => req.not_found(),
        Some(_) => conflict(req, MODIFIED),
    }
}

/// What an update computes from the current object.
pub struct Update {
    /// Fail with 409 unless the current object is at this revision.
    pub precondition: Option<u64>,
    pub validation: FieldValidation,
    /// Keys the request body repeated, reported per `validation`.
    pub duplicates: Vec<String>,
    pub dry_run: bool,
    /// Who writes, for `managedFields` (`None`: a server-side apply, which recorded them).
    pub manager: Option<Manager>,
}

/// The guaranteed-update loop: read the current object, compute the new one with `mutate`,
/// admit it, and compare-and-set it at the read revision; retry when another write won,
/// unless a precondition pins the revision. A no-op returns the current object unwritten.
pub async fn update(
    ctx: &Ctx,
    req: &ResourceRequest,
    opts: Update,
    warnings: &mut Vec<String>,
    mut mutate: impl FnMut(&Value) -> ApiResult<Value>,
) -> ApiResult<Reply> {
    let info = req.info;
    let key = req.key();
    for _ in 0..MAX_RETRIES {
        let current = current(ctx, req, &key, opts.precondition).await?;
        if opts.precondition.is_some_and(|rv| rv != current.rev) {
            return Err(conflict(req, MODIFIED));
        }
        // Custom resources are changed in the version the request names.
        let old = convert::in_version(&ctx.store, info, parse(&current)?).await?;
        let mut new = mutate(&old)?;
        let mut w = Vec::new();
        new = prepare::decode(info, new, opts.validation, &opts.duplicates, &mut w)?;
        meta::carry_over(info, &old, &mut new);
        w.extend(ctx.writes.admission.mutate(req, Operation::Update, &mut new, Some(&old), opts.dry_run).await?);
        // A pod's part changes after mutating admission, as Kubernetes' strategies for it run
        // then: what the client or a webhook changed elsewhere is dropped.
        new = match req.subresource.as_deref() {
            Some("ephemeralcontainers") => super::pod_parts::ephemeral_containers(&old, &new, req.name())?,
            Some("resize") => super::pod_parts::resize(&old, &new, req.name())?,
            _ => new,
        };
        if let Err(e) = prepare::validate(info, &new, Some(&old)) {
            warnings.extend(w);
            return Err(e);
        }
        // A subresource with its own rules (a pod's binding, ephemeral containers, resize)
        // changes what a plain update may not.
        let own_rules = matches!(req.subresource.as_deref(), Some("binding" | "ephemeralcontainers" | "resize"));
        let causes = if own_rules { Vec::new() } else { (info.ops.strategy.update)(&old, &mut new) };
        if !causes.is_empty() {
            warnings.extend(w);
            return Err(info.invalid(req.name(), causes));
        }
        if let (None, Some(warn)) = (req.subresource.as_deref(), info.ops.strategy.warnings) {
            w.extend(warn(&new, Some(&old)));
        }
        let node_ports = match is_service(info) && req.subresource.is_none() {
            true => ctx.writes.node_ports.plan(ctx.store.cache(), Some(&old), &mut new, req.namespace.as_deref().unwrap_or_default(), req.name())?,
            false => nodeports::Plan::default(),
        };
        w.extend(ctx.writes.admission.validate(req, Operation::Update, Some(&mut new), Some(&old), opts.dry_run).await?);
        if meta::without_rv(&new) == meta::without_rv(&old) {
            warnings.extend(w);
            return Ok(Reply::object(StatusCode::OK, convert::read_form(&ctx.store, info, current.data).await?));
        }
        if let Some(m) = &opts.manager {
            fieldmanager::update(Some(&old), &mut new, m, &info.schema_definition(), &meta::now());
        }
        // An object being deleted goes away with an update that leaves it no finalizer, unless
        // its deletion still has a grace period to run (a terminating pod's status updates keep
        // it until its kubelet deletes it), as Kubernetes' generic store decides.
        let deleting = old["metadata"].get("deletionTimestamp").is_some();
        let graceful = old["metadata"]["deletionGracePeriodSeconds"].as_i64().is_some_and(|g| g > 0);
        let finalized = deleting && !graceful && finalizers_empty(&new);
        if opts.dry_run {
            warnings.extend(w);
            return Ok(Reply::value(StatusCode::OK, &new));
        }
        let new = convert::to_storage(&ctx.store, info, new).await?;
        let op = if finalized {
            Op { key: key.clone(), cond: Cond::Rev(current.rev), action: Action::Delete }
        } else {
            Op { key: key.clone(), cond: Cond::Rev(current.rev), action: Action::Put(to_bytes(&new)?) }
        };
        let mut ops = vec![op];
        if finalized {
            ops.extend(release_ops(info, &new));
        } else {
            ops.extend(node_ports.take.into_iter().chain(node_ports.give_back));
        }
        match super::commit(ctx, Txn::new(ops)).await? {
            TxnResult::Ok { objects, .. } => {
                warnings.extend(w);
                // A finalized object is answered as it was last, its finalizers gone.
                let stored = match finalized {
                    true => to_bytes(&new)?,
                    false => objects.into_iter().next().flatten().ok_or_else(|| ApiError::internal("no object stored"))?.data,
                };
                return Ok(Reply::object(StatusCode::OK, convert::read_form(&ctx.store, info, stored).await?));
            }
            // A node port taken meanwhile by another Service (a later op) is chosen again.
            TxnResult::Failed { op: 0, current } if opts.precondition.is_some() => return Err(lost(req, current)),
            TxnResult::Failed { .. } => continue,
            TxnResult::None => return Err(ApiError::internal("unexpected entry result")),
        }
    }
    Err(conflict(req, MODIFIED))
}

/// Keys released together with an object: a Service's cluster IP and node port reservations.
fn release_ops(info: &ResourceInfo, obj: &Value) -> Vec<Op> {
    if !is_service(info) {
        return Vec::new();
    }
    let ips = obj["spec"]["clusterIPs"].as_array().into_iter().flatten().filter_map(Value::as_str).filter(|ip| *ip != "None");
    let ips = ips.map(|ip| Op { key: ServiceIps::key(ip), cond: Cond::Any, action: Action::Delete });
    ips.chain(nodeports::ports_of(obj).into_iter().map(nodeports::release)).collect()
}

/// Deletes one object. Objects with finalizers (and namespaces, which the namespace
/// controller empties first) are marked with `deletionTimestamp` and stay until finalized.
pub async fn delete(ctx: &Ctx, req: &ResourceRequest, opts: &DeleteOptions) -> ApiResult<Reply> {
    let info = req.info;
    let key = req.key();
    for _ in 0..MAX_RETRIES {
        let current = current(ctx, req, &key, opts.resource_version).await?;
        let mut obj = parse(&current)?;
        ctx.writes.admission.validate(req, Operation::Delete, None, Some(&obj), opts.dry_run).await?;
        let uid = meta_str(&obj, "uid").map(str::to_string);
        if let Some(want) = &opts.uid {
            if uid.as_deref() != Some(want.as_str()) {
                return Err(conflict(
                    req,
                    &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {}", uid.unwrap_or_default()),
                ));
            }
        }
        if let Some(want) = opts.resource_version {
            if want != current.rev {
                return Err(conflict(
                    req,
                    &format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}", current.rev),
                ));
            }
        }
        let first = obj["metadata"].get("deletionTimestamp").is_none();
        let mut finalizers_changed = finalizers::on_delete(info, opts.propagation, &mut obj);
        let marked = match info.ops.strategy.marks_deletion {
            Some(mark) if first => {
                mark(&mut obj);
                finalizers_changed = true;
                true
            }
            _ => false,
        };
        let period = machinery::grace::period(info, &obj, opts.grace_period);
        let namespace = info.resource == "namespaces" && info.group.is_empty();
        let graceful = !finalizers_empty(&obj) || namespace || period > 0;
        if graceful {
            let already = !first;
            // A second delete may shorten a pod's grace, never lengthen it.
            let shortened = already && period > 0 && machinery::grace::sooner(&obj, period);
            if already && !finalizers_changed && !shortened {
                return Ok(Reply::object(StatusCode::OK, convert::read_form(&ctx.store, info, current.data).await?));
            }
            let m = meta_mut(&mut obj);
            if !already && !marked {
                bump_generation(m);
            }
            if (!already && !marked) || shortened {
                m.insert("deletionTimestamp".into(), json!(machinery::grace::deadline(period)));
                // A namespace is marked with the time only, as Kubernetes' namespace registry does.
                if !namespace {
                    m.insert("deletionGracePeriodSeconds".into(), json!(period));
                }
            }
            m.remove("resourceVersion");
            if namespace {
                obj["status"]["phase"] = json!("Terminating");
            }
            if opts.dry_run {
                return Ok(Reply::value(StatusCode::OK, &convert::in_version(&ctx.store, info, obj).await?));
            }
            let op = Op { key: key.clone(), cond: Cond::Rev(current.rev), action: Action::Put(to_bytes(&obj)?) };
            match super::commit(ctx, Txn::new(vec![op])).await? {
                TxnResult::Ok { objects, .. } => {
                    let stored = objects.into_iter().next().flatten().ok_or_else(|| ApiError::internal("no object stored"))?;
                    return Ok(Reply::object(StatusCode::OK, convert::read_form(&ctx.store, info, stored.data).await?));
                }
                TxnResult::Failed { current, .. } if opts.resource_version.is_some() => return Err(lost(req, current)),
                _ => continue,
            }
        }
        if machinery::grace::is_pod(info) {
            // A pod is deleted gracefully even with no time to wait: it goes at once, and the
            // answer shows it marked as Kubernetes marks it on the way.
            let m = meta_mut(&mut obj);
            bump_generation(m);
            m.insert("deletionTimestamp".into(), json!(machinery::grace::deadline(0)));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        if opts.dry_run {
            return removed(ctx, req, uid.as_deref(), obj).await;
        }
        let mut ops = vec![Op { key: key.clone(), cond: Cond::Rev(current.rev), action: Action::Delete }];
        ops.extend(release_ops(info, &obj));
        match super::commit(ctx, Txn::new(ops)).await? {
            TxnResult::Ok { .. } => return removed(ctx, req, uid.as_deref(), obj).await,
            TxnResult::Failed { current, .. } if opts.resource_version.is_some() => return Err(lost(req, current)),
            _ => continue,
        }
    }
    Err(conflict(req, MODIFIED))
}

/// The answer to a DELETE that removed `obj`: the object itself for the kinds whose registry
/// returns it (pods, services, ...), otherwise the success `Status`.
async fn removed(ctx: &Ctx, req: &ResourceRequest, uid: Option<&str>, obj: Value) -> ApiResult<Reply> {
    let info = req.info;
    if info.ops.strategy.returns_deleted {
        return Ok(Reply::value(StatusCode::OK, &convert::in_version(&ctx.store, info, obj).await?));
    }
    Ok(Reply::deleted(info, req.name(), uid))
}

//! Auditing, as kube-apiserver's log and webhook backends do it (`--audit-policy-file`,
//! `--audit-log-path`, `--audit-webhook-config-file`):
//! each request the policy selects is written as `audit.k8s.io/v1` Events, one JSON line per
//! stage (RequestReceived, ResponseStarted for watches, ResponseComplete), with who asked (and
//! whom they impersonated), what they asked for, the answer's code, the authorizer's decision
//! and the annotations admission adds; the request and response objects at the `Request` and
//! `RequestResponse` levels. Lines go to a writer thread, so no request waits for the disk; the
//! file rotates as kube-apiserver's does ([`log_file`]). Events for the webhook go in batches
//! through a bounded buffer ([`webhook`]).
//!
//! Annotations reach the current request's record through a task-local scope around the request
//! (`admission::audit_annotations::annotate`); outside one (controllers), they are dropped.

pub mod log_file;
pub mod policy;
pub mod stage;
pub mod webhook;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, OnceLock};

use admission::audit_annotations::{self, Annotations};

use serde_json::Value;

use access::attributes::Attributes;
use access::UserInfo;
use crate::metrics::Metrics;
use log_file::{LogFile, Rotation};
use machinery::webhook::Endpoint;
use policy::{Decision, Level, Policy, Stage};

/// The annotations of the authorizer's decision and its reason.
pub const DECISION: &str = "authorization.k8s.io/decision";
pub const REASON: &str = "authorization.k8s.io/reason";

/// The replica that served the request (`node-N`, as its traces name it), on every event: a
/// cluster's replicas may write to one webhook or one log collector.
pub const REPLICA: &str = "apiserver/replica";
/// The `resourceVersion` a write became, on the events of a write that was applied.
pub const RESOURCE_VERSION: &str = "apiserver/resource-version";

/// The request header a client may set to name the audit ID (kept when it is sane), and the
/// response header that tells it.
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// The writers of audit events and the policy that selects them.
pub struct Auditor {
    policy: Policy,
    log: Option<mpsc::Sender<Vec<u8>>>,
    webhook: Option<webhook::Webhook>,
    metrics: Arc<Metrics>,
    /// This replica's name, for [`REPLICA`].
    replica: String,
}

/// Where events go: a log file (`-`: standard output) with its rotation, a webhook with its
/// batching, or both.
#[derive(Default)]
pub struct Backends {
    pub log: Option<(PathBuf, Rotation)>,
    pub webhook: Option<(Endpoint, webhook::Mode, webhook::BatchOptions)>,
}

impl Auditor {
    /// Reads the policy and starts the backends; `replica` names this node in every event.
    pub fn open(policy_file: &Path, backends: Backends, metrics: Arc<Metrics>, replica: String) -> anyhow::Result<Arc<Auditor>> {
        let text = std::fs::read_to_string(policy_file).map_err(|e| anyhow::anyhow!("reading {}: {e}", policy_file.display()))?;
        let policy = Policy::parse(&text).map_err(anyhow::Error::msg)?;
        let log = match backends.log {
            Some((path, rotation)) => {
                let out = if path == Path::new("-") {
                    Sink::Stdout(std::io::BufWriter::new(std::io::stdout()))
                } else {
                    Sink::File(LogFile::open(&path, rotation).map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?)
                };
                let (tx, rx) = mpsc::channel::<Vec<u8>>();
                let m = metrics.clone();
                std::thread::Builder::new().name("audit-log".into()).spawn(move || write_lines(rx, out, &m))?;
                Some(tx)
            }
            None => None,
        };
        let webhook = backends.webhook.map(|(endpoint, mode, opts)| webhook::Webhook::start(endpoint, mode, opts, metrics.clone()));
        Ok(Arc::new(Auditor { policy, log, webhook, metrics, replica }))
    }

    /// The record of one request, if the policy audits it: decided, as in Kubernetes, by who
    /// authenticated (`attrs.user`), before any impersonation.
    /// `request` is asked only for a request the policy audits.
    pub fn begin(self: &Arc<Self>, audit_id: &str, attrs: &Attributes, request: impl FnOnce() -> RequestFacts) -> Option<Record> {
        let decision = self.policy.decide(attrs);
        self.metrics.audit.level(decision.level.as_str());
        if decision.level == Level::None {
            return None;
        }
        let request = request();
        let object_ref = attrs.resource_request.then(|| ObjectRef {
            resource: attrs.resource.clone(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            api_group: attrs.api_group.clone(),
            api_version: attrs.api_version.clone(),
            subresource: attrs.subresource.clone(),
        });
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: decision.level,
            audit_id: audit_id.to_string(),
            request_uri: request.uri,
            verb: attrs.verb.clone(),
            user: AuditUser::of(&attrs.user),
            impersonated_user: None,
            source_ips: request.source_ips,
            user_agent: request.user_agent,
            request_received_timestamp: micros_now(),
        };
        let annotations = Annotations::default();
        annotations.lock().unwrap_or_else(|e| e.into_inner()).insert(REPLICA.to_string(), self.replica.clone());
        Some(Record { auditor: self.clone(), decision, event, encoded: OnceLock::new(), object_ref, annotations })
    }

    /// Encodes an event for each backend: its JSON line for the log, its value for the webhook.
    /// `fixed` is the request's fixed part, encoded; `stage` what this stage adds.
    fn encode(&self, fixed: &str, stage: &StageLine) -> Encoded {
        self.metrics.audit.event();
        // `{` and the fixed part's members, then the stage's object with its `{` made a comma.
        let mut line = Vec::with_capacity(fixed.len() + 512);
        line.extend_from_slice(&fixed.as_bytes()[..fixed.len() - 1]);
        let joint = line.len();
        if serde_json::to_writer(&mut line, stage).is_err() {
            return Encoded { log: None, webhook: None };
        }
        line[joint] = b',';
        let webhook = self.webhook.as_ref().and_then(|_| serde_json::from_slice(&line).ok());
        let log = self.log.as_ref().map(|_| {
            line.push(b'\n');
            line
        });
        Encoded { log, webhook }
    }

    /// Hands an event to each backend; false when a backend that must take it did not (the
    /// webhook in `blocking-strict` mode).
    async fn record(&self, event: Encoded) -> bool {
        if let (Some(log), Some(line)) = (&self.log, event.log) {
            if log.send(line).is_err() {
                self.metrics.audit.failed("log", 1);
            }
        }
        match (&self.webhook, event.webhook) {
            (Some(webhook), Some(event)) => webhook.process(&event).await,
            _ => true,
        }
    }
}

/// What every event of a request says, fixed once the request's user is known (and whom it
/// impersonates): encoded once, for all its events.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    kind: &'static str,
    api_version: &'static str,
    level: Level,
    #[serde(rename = "auditID")]
    audit_id: String,
    #[serde(rename = "requestURI")]
    request_uri: String,
    verb: String,
    user: AuditUser,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<AuditUser>,
    #[serde(rename = "sourceIPs")]
    source_ips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_agent: Option<String>,
    request_received_timestamp: String,
}

/// A user as an event names it (`authentication.k8s.io/v1` `UserInfo`).
#[derive(serde::Serialize, PartialEq)]
struct AuditUser {
    username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    groups: Vec<String>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl AuditUser {
    fn of(u: &UserInfo) -> AuditUser {
        AuditUser { username: u.name.clone(), uid: u.uid.clone(), groups: u.groups.clone(), extra: u.extra.clone() }
    }
}

/// The object a resource request is about; empty parts left out.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    subresource: String,
}

/// What an event adds to the request's fixed part: the object (a create's name is known only
/// once its body is read), the stage and what is known by then.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StageLine<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<&'a ObjectRef>,
    stage: Stage,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<ResponseStatus<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<Value>,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a std::collections::BTreeMap<String, String>>,
}

/// The answer's `Status` as an event holds it: the code, and of a failure's `Status` body its
/// status, message, reason and details.
#[derive(serde::Serialize)]
struct ResponseStatus<'a> {
    metadata: Empty,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
    code: u16,
}

impl<'a> ResponseStatus<'a> {
    fn of(answer: &'a Answer) -> ResponseStatus<'a> {
        let field = |key: &str| answer.status.as_ref().and_then(|s| s.as_object()).and_then(|s| s.get(key));
        ResponseStatus { metadata: Empty {}, status: field("status"), message: field("message"), reason: field("reason"), details: field("details"), code: answer.code }
    }
}

/// An empty JSON object.
#[derive(serde::Serialize)]
struct Empty {}

/// An event encoded for the backends configured.
struct Encoded {
    log: Option<Vec<u8>>,
    webhook: Option<Value>,
}

/// What the audit event says about the HTTP request itself.
pub struct RequestFacts {
    pub uri: String,
    pub source_ips: Vec<String>,
    pub user_agent: Option<String>,
}

/// One audited request: the event's fixed part (and its encoding, once made), the object it is
/// about, and the annotations gathered while it is served.
pub struct Record {
    auditor: Arc<Auditor>,
    decision: Decision,
    event: Event,
    encoded: OnceLock<String>,
    object_ref: Option<ObjectRef>,
    annotations: Annotations,
}

impl Record {
    /// Runs `f` with `audit_annotations::annotate` adding to this record.
    pub async fn scope<F: std::future::Future>(&self, f: F) -> F::Output {
        audit_annotations::scope(self.annotations.clone(), f).await
    }

    /// Names the user the request acts as, when it impersonates one.
    pub fn impersonated(&mut self, as_user: &UserInfo) {
        let as_user = AuditUser::of(as_user);
        if self.event.user != as_user {
            self.event.impersonated_user = Some(as_user);
            self.encoded = OnceLock::new();
        }
    }

    /// Sets `objectRef.name` (a create's, known from its body).
    pub fn name_object(&mut self, name: &str) {
        if let Some(object) = &mut self.object_ref {
            object.name = name.to_string();
        }
    }

    /// Whether the policy asks for the request body (the `Request` level and above).
    pub fn wants_request(&self) -> bool {
        self.decision.level >= Level::Request
    }

    /// Whether the policy asks for the response body (`RequestResponse`).
    pub fn wants_response(&self) -> bool {
        self.decision.level >= Level::RequestResponse
    }

    /// Writes the event of `stage` (unless the policy leaves it out), with what is known by then;
    /// false when a backend that must take it did not.
    pub async fn emit(&self, stage: Stage, answer: Option<&Answer>) -> bool {
        if self.decision.omit_stages.contains(&stage) {
            return true;
        }
        let fixed = self.encoded.get_or_init(|| serde_json::to_string(&self.event).unwrap_or_else(|_| r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1"}"#.into()));
        let mut line = StageLine {
            object_ref: self.object_ref.as_ref(),
            stage,
            response_status: answer.map(ResponseStatus::of),
            request_object: None,
            response_object: None,
            stage_timestamp: micros_now(),
            annotations: None,
        };
        if let Some(a) = answer {
            line.request_object = a.request_object.as_ref().map(|body| self.trimmed(body));
            line.response_object = a.response_object.as_ref().map(|body| self.trimmed(body));
        }
        let encoded = {
            let annotations = self.annotations.lock().unwrap_or_else(|e| e.into_inner());
            line.annotations = (!annotations.is_empty()).then_some(&*annotations);
            self.auditor.encode(fixed, &line)
        };
        self.auditor.record(encoded).await
    }

    /// An object as the event holds it: without `managedFields` when the policy says so.
    fn trimmed(&self, body: &Value) -> Value {
        let mut body = body.clone();
        if self.decision.omit_managed_fields {
            strip_managed_fields(&mut body);
        }
        body
    }
}

/// How a request was answered, for its last event.
#[derive(Default)]
pub struct Answer {
    pub code: u16,
    /// The `Status` body of a failure.
    pub status: Option<Value>,
    pub request_object: Option<Value>,
    pub response_object: Option<Value>,
}

fn strip_managed_fields(body: &mut Value) {
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = body.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

fn micros_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Where the lines go.
enum Sink {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(LogFile),
}

impl Sink {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.write_all(line),
            Sink::File(file) => file.append(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File(file) => file.flush(),
        }
    }
}

/// How long the writer lets lines gather after the first of a batch: the requests that send
/// them then wake it a few hundred times a second at most, instead of once per event.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// Appends each line; flushes whenever no more are waiting. Lines that could not be written are
/// counted as the log backend's errors.
fn write_lines(rx: mpsc::Receiver<Vec<u8>>, mut out: Sink, metrics: &Metrics) {
    while let Ok(line) = rx.recv() {
        std::thread::sleep(GATHER);
        let mut failed = usize::from(out.append(&line).is_err());
        let mut written = 1;
        while let Ok(more) = rx.try_recv() {
            failed += usize::from(out.append(&more).is_err());
            written += 1;
        }
        if let Err(e) = out.flush() {
            failed = written;
            tracing::error!(error = %e, "writing the audit log failed");
        } else if failed > 0 {
            tracing::error!(failed, "audit events could not be written to the log");
        }
        if failed > 0 {
            metrics.audit.failed("log", failed);
        }
    }
}

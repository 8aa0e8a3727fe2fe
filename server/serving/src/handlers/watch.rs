//! The watch verb: optional initial state, then every change after the start revision, as a
//! stream of events; bookmarks when asked for; closed when the client falls too far behind.

use std::time::Duration;

use bytes::Bytes;
use raft_store::{EventType, Selects, StoreError, WatchError, Watcher};
use serde_json::json;
use tokio::sync::mpsc;

use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::query::{invalid_options, Params};
use machinery::registry::{self, ResourceInfo};
use access::request::ResourceRequest;
use machinery::selector::Filter;

/// How a watch writes its events: an event's object in the response's form and encoding, then
/// the frame around it. Each store event's object is encoded once per form and shared by every
/// watcher of that form (Kubernetes' caching object), when the form can be shared.
pub struct Encoder {
    /// An event's object (JSON, in the watched version) in the response's form and encoding,
    /// given the event's type (a table's rows need it).
    pub object: Box<dyn Fn(&str, Bytes) -> ApiResult<Bytes> + Send + Sync>,
    /// One frame of the response from an event's type and its encoded object.
    pub frame: fn(&str, Bytes) -> Bytes,
    /// The name watchers share an event's encoded object under (its encoding, form and
    /// version); `None` when there is nothing to share (JSON objects go out as stored) or each
    /// watcher's differs (a table's first row carries the columns).
    pub shared: Option<String>,
}

/// Frames buffered towards a client before the event stream stops being drained.
const SEND_BUFFER: usize = 256;

/// How a watch starts.
struct Start {
    /// Revision the watch follows from.
    rev: u64,
    /// Send the state at `rev` as ADDED events first.
    initial: bool,
    /// After the initial events, a bookmark marks their end (`sendInitialEvents`).
    end_bookmark: bool,
}

async fn plan(ctx: &Ctx, params: &Params) -> ApiResult<Start> {
    let rv = params.value("resourceVersion");
    let rvm = params.value("resourceVersionMatch");
    let send_initial = match params.get("sendInitialEvents") {
        None => None,
        Some(_) => Some(params.flag("sendInitialEvents")?),
    };
    if send_initial.is_some() && rvm != Some("NotOlderThan") {
        return Err(invalid_options(
            "ListOptions",
            vec![Cause::new("FieldValueForbidden", "resourceVersionMatch", "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")],
        ));
    }
    if send_initial.is_none() && rvm.is_some() {
        return Err(invalid_options(
            "ListOptions",
            vec![Cause::new("FieldValueForbidden", "resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")],
        ));
    }
    let end_bookmark = send_initial == Some(true) && params.flag("allowWatchBookmarks")?;
    Ok(match rv {
        None => Start { rev: ctx.store.linearizable_rev().await?, initial: send_initial.unwrap_or(true), end_bookmark },
        Some("0") => Start { rev: ctx.store.cache().applied(), initial: send_initial.unwrap_or(true), end_bookmark },
        Some(v) => {
            let rev: u64 = v.parse().map_err(|_| {
                invalid_options("ListOptions", vec![Cause::invalid("resourceVersion", v, "must be a non-negative integer")])
            })?;
            ctx.store.wait_for(rev, ctx.settings.rv_wait).await?;
            match send_initial {
                Some(true) => Start { rev: ctx.store.cache().applied(), initial: true, end_bookmark },
                _ => Start { rev, initial: false, end_bookmark: false },
            }
        }
    })
}

/// Starts a watch and returns the stream of encoded frames.
pub async fn watch(ctx: &Ctx, req: &ResourceRequest, params: &Params, encode: Encoder) -> ApiResult<mpsc::Receiver<Bytes>> {
    let info = req.info;
    let mut field = params.get("fieldSelector").unwrap_or_default().to_string();
    if let Some(name) = &req.name {
        // Watching one object is watching its collection filtered by name.
        field = if field.is_empty() { format!("metadata.name={name}") } else { format!("{field},metadata.name={name}") };
    }
    let filter = Filter::new(info, params.get("labelSelector"), Some(&field))?;
    let bookmarks = params.flag("allowWatchBookmarks")?;
    let timeout = match params.uint("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s),
        _ => ctx.settings.watch_timeout,
    };
    let start = plan(ctx, params).await?;
    let prefix = info.list_prefix(req.namespace.as_deref());
    let cache = ctx.store.cache();
    let (tx, rx) = mpsc::channel(SEND_BUFFER);

    let mut initial = Vec::new();
    let mut from = start.rev;
    if start.initial {
        let state = cache.list(&prefix, None, None, None, &|_| true)?;
        from = state.rev;
        initial = state.items;
    }
    let watcher = match cache.watch_selecting(&prefix, from, selects(info, &filter)) {
        Ok(w) => w,
        Err(StoreError::Compacted { requested, compacted }) => {
            let status = ApiError::Gone(format!("too old resource version: {requested} ({})", compacted + 1)).status();
            if let Ok(object) = (encode.object)("ERROR", Bytes::from(serde_json::to_vec(&status).unwrap_or_default())) {
                let _ = tx.try_send((encode.frame)("ERROR", object));
            }
            return Ok(rx);
        }
        Err(e) => return Err(e.into()),
    };
    let counted = ctx.filters.metrics.watch.of(info.group, info.version, info.resource);
    let stream = Stream { info, store: ctx.store.clone(), filter, encode, tx, bookmarks, interval: ctx.settings.bookmark_interval, counted };
    // This task is most of what an idle watch costs: its future holds room for its deepest
    // await, so a conversion webhook's call (the deepest) is boxed where it is made.
    tokio::spawn(async move {
        for obj in initial {
            if stream.matches(&obj.data) && !stream.send_object("ADDED", obj.data).await {
                return;
            }
        }
        if start.end_bookmark && !stream.bookmark(from, true).await {
            return;
        }
        // As Kubernetes does, a bookmark goes out shortly before the watch times out, so that
        // the client resumes from the newest revision.
        let last_call = timeout.checked_sub(BOOKMARK_BEFORE_TIMEOUT).map(|d| tokio::time::Instant::now() + d);
        let _ = tokio::time::timeout(timeout, stream.follow(watcher, last_call)).await;
    });
    Ok(rx)
}

/// What the watch selects, as the store's fan-out indexes it: one name, one value of the kind's
/// indexed field, or everything.
fn selects(info: &ResourceInfo, filter: &Filter) -> Selects {
    if let Some(name) = filter.field.required("metadata.name") {
        return Selects::Name(name.to_string());
    }
    match info.ops.strategy.watch_index.and_then(|field| Some((field, filter.field.required(field)?))) {
        Some((field, value)) => Selects::Field { field: field.to_string(), value: value.to_string() },
        None => Selects::Everything,
    }
}

/// The ERROR event's Status for an event whose object cannot be decoded.
fn undecodable_event(ev: &raft_store::Event, why: &str) -> Vec<u8> {
    let storage = machinery::error::corrupt_object(&raft_store::CorruptObject { key: ev.key.clone(), rev: ev.rev, reason: why.to_string() });
    let error = match ev.kind {
        EventType::Deleted => ApiError::Passed {
            code: 500,
            reason: "StorageReadError".into(),
            message: format!("saw a DELETED event, but object data is corrupt - {storage}"),
        },
        _ => ApiError::Internal(format!("Internal error occurred: {storage}")),
    };
    serde_json::to_vec(&error.status()).unwrap_or_default()
}

/// How long before a watch times out its last bookmark is sent.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);

struct Stream {
    info: &'static ResourceInfo,
    store: raft_store::Store,
    filter: Filter,
    encode: Encoder,
    tx: mpsc::Sender<Bytes>,
    bookmarks: bool,
    interval: Duration,
    counted: crate::metrics::WatchCounters,
}

impl Stream {
    fn matches(&self, data: &[u8]) -> bool {
        self.filter.matches_stored(data)
    }

    /// Sends one event of an encoded object; false once the client is gone.
    async fn send_encoded(&self, kind: &str, object: Bytes) -> bool {
        let frame = (self.encode.frame)(kind, object);
        self.counted.sent(frame.len());
        self.tx.send(frame).await.is_ok()
    }

    /// Sends one event (an object's JSON); false once the client is gone or the object could
    /// not be encoded (the watch ends with an ERROR event, as Kubernetes' does).
    async fn send(&self, kind: &str, data: Bytes) -> bool {
        match (self.encode.object)(kind, data) {
            Ok(object) => self.send_encoded(kind, object).await,
            Err(e) => self.fail(e).await,
        }
    }

    /// Ends the watch with an ERROR event saying why; always false.
    async fn fail(&self, e: ApiError) -> bool {
        tracing::error!(resource = self.info.resource, "a watch event cannot be sent: {e}");
        let status = Bytes::from(serde_json::to_vec(&e.status()).unwrap_or_default());
        if let Ok(object) = (self.encode.object)("ERROR", status) {
            let _ = self.send_encoded("ERROR", object).await;
        }
        false
    }

    /// Sends one stored object, in the version watched; an object that cannot be converted or
    /// encoded ends the watch with an ERROR event. False once the watch is over.
    async fn send_object(&self, kind: &str, data: Bytes) -> bool {
        match registry::convert::read_form(&self.store, self.info, data).await {
            Ok(data) => self.send(kind, data).await,
            Err(e) => self.fail(e).await,
        }
    }

    /// Sends one store event's object, encoded once for every watcher of the same form.
    async fn send_event(&self, kind: &str, ev: &raft_store::Event) -> bool {
        let Some(shared) = self.encode.shared.as_deref() else { return self.send_object(kind, ev.object.data.clone()).await };
        if let Some(object) = ev.form(shared) {
            return self.send_encoded(kind, object).await;
        }
        let encoded = match registry::convert::read_form(&self.store, self.info, ev.object.data.clone()).await {
            Ok(data) => (self.encode.object)(kind, data),
            Err(e) => Err(e),
        };
        match encoded {
            Ok(object) => self.send_encoded(kind, ev.keep_form(shared, object)).await,
            Err(e) => self.fail(e).await,
        }
    }

    async fn bookmark(&self, rev: u64, initial_end: bool) -> bool {
        let mut meta = json!({"resourceVersion": rev.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta});
        self.send("BOOKMARK", Bytes::from(serde_json::to_vec(&obj).unwrap_or_default())).await
    }

    /// A bookmark at the revision the watcher has caught up to, when it has (an event still
    /// queued for it would come after). False once the client is gone.
    async fn progress_bookmark(&self, watcher: &mut Watcher) -> bool {
        match watcher.progress() {
            Some(rev) => self.bookmark(rev, false).await,
            None => true,
        }
    }

    /// Forwards events until the client leaves, the watcher falls behind, or the store closes.
    async fn follow(&self, mut watcher: Watcher, last_call: Option<tokio::time::Instant>) {
        let mut tick = tokio::time::interval(self.interval);
        tick.tick().await;
        let mut last_call_due = last_call.is_some();
        let before_timeout = tokio::time::sleep_until(last_call.unwrap_or_else(tokio::time::Instant::now));
        tokio::pin!(before_timeout);
        loop {
            tokio::select! {
                ev = watcher.next() => {
                    let ev = match ev {
                        Ok(ev) => ev,
                        Err(WatchError::Lagged) | Err(WatchError::Closed) => return,
                    };
                    if let Some(why) = &ev.undecodable {
                        // The event cannot be decoded: the watch ends with an error, as
                        // Kubernetes' does, and the client lists again.
                        let _ = self.send("ERROR", Bytes::from(undecodable_event(&ev, why))).await;
                        return;
                    }
                    // A change moving an object into or out of the selection is an ADDED or
                    // DELETED event for this watcher.
                    let now = ev.kind != EventType::Deleted && self.matches(&ev.object.data);
                    let before = ev.prev.as_ref().is_some_and(|p| self.matches(&p.data));
                    let kind = match (before, now, ev.kind) {
                        (_, _, EventType::Deleted) if self.matches(&ev.object.data) => "DELETED",
                        (_, _, EventType::Deleted) => continue,
                        (true, true, _) => "MODIFIED",
                        (false, true, _) => "ADDED",
                        (true, false, _) => "DELETED",
                        (false, false, _) => continue,
                    };
                    if !self.send_event(kind, &ev).await {
                        return;
                    }
                }
                _ = tick.tick(), if self.bookmarks => {
                    if !self.progress_bookmark(&mut watcher).await {
                        return;
                    }
                }
                _ = &mut before_timeout, if self.bookmarks && last_call_due => {
                    last_call_due = false;
                    if !self.progress_bookmark(&mut watcher).await {
                        return;
                    }
                }
                _ = self.tx.closed() => return,
            }
        }
    }
}

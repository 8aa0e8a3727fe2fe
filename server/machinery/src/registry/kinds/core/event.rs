//! Events of `v1` and of `events.k8s.io/v1` (one kind in two versions): their fields written
//! even when empty, the checks each version makes (`v1` the old ones only, kept for old
//! clients; `events.k8s.io/v1` all, and most fields fixed once written), and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{col, invalid, qualified_name, required};
use crate::registry::convert::StoredAs;
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// A `v1` Event.
pub const STRATEGY: Strategy = Strategy {
    default: |e| defaults(e, &CORE),
    validate: |e| legacy(e, &CORE),
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// An `events.k8s.io/v1` Event.
pub const EVENTS_V1: Strategy = Strategy {
    default: |e| defaults(e, &EVENTS),
    validate: strict,
    update,
    columns: COLUMNS,
    cells,
    refused_as_group: Some(""),
    ..Strategy::NONE
};

/// `events.k8s.io/v1` Events are stored as `v1` Events: one object, read through either group.
pub static EVENTS_V1_STORED_AS_CORE: StoredAs = StoredAs { api_version: "v1", from_storage: |e| renamed(e, "events.k8s.io/v1", false), to_storage: |e| renamed(e, "v1", true) };

/// The fields the two versions name differently: `v1`'s, then `events.k8s.io/v1`'s.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// An Event in `api_version`, its fields renamed to `v1`'s (`to_core`) or from them.
fn renamed(mut event: Value, api_version: &str, to_core: bool) -> Value {
    let Some(map) = event.as_object_mut() else { return event };
    for (core, events) in RENAMED {
        let (from, to) = if to_core { (events, core) } else { (core, events) };
        if let Some(v) = map.remove(*from) {
            map.insert(to.to_string(), v);
        }
    }
    // The source is a struct, not a pointer, in Kubernetes' types: always written, empty or not.
    map.entry(if to_core { "source" } else { "deprecatedSource" }).or_insert_with(|| json!({}));
    map.insert("apiVersion".into(), json!(api_version));
    event
}

/// Where a version keeps the fields Kubernetes checks (refusals name the reporting controller
/// by the version's field).
struct Fields {
    regarding: &'static str,
    controller: &'static str,
    note: &'static str,
    /// Fields the version's type always writes: `null` times and empty strings.
    written: &'static [(&'static str, Value)],
}

const CORE: Fields = Fields {
    regarding: "involvedObject",
    controller: "reportingComponent",
    note: "message",
    written: &[("eventTime", Value::Null), ("reportingComponent", json_str()), ("reportingInstance", json_str())],
};

const EVENTS: Fields = Fields {
    regarding: "regarding",
    controller: "reportingController",
    note: "note",
    written: &[("deprecatedFirstTimestamp", Value::Null), ("deprecatedLastTimestamp", Value::Null)],
};

const fn json_str() -> Value {
    Value::String(String::new())
}

/// The longest reporting instance, action and reason; the longest note.
const SHORT_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn defaults(event: &mut Value, fields: &Fields) {
    for (field, value) in fields.written {
        if event.get(*field).is_none() {
            event[*field] = value.clone();
        }
    }
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    event[field].as_str().unwrap_or_default()
}

/// The checks of every Event: its namespace is its object's, and an event with an event time
/// names who reported it, what happened and why.
fn legacy(event: &Value, fields: &Fields) -> Vec<Cause> {
    let mut out = Vec::new();
    let namespace = event["metadata"]["namespace"].as_str().unwrap_or_default();
    let regarding = &event[fields.regarding]["namespace"];
    let regarding_ns = regarding.as_str().unwrap_or_default();
    let mismatch = || invalid("involvedObject.namespace", &json!(regarding_ns), "does not match event.namespace");
    if event["eventTime"].is_null() {
        if (regarding_ns.is_empty() && !namespace.is_empty() && namespace != "default") || (!regarding_ns.is_empty() && namespace != regarding_ns) {
            out.push(mismatch());
        }
        return out;
    }
    if regarding_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
        out.push(mismatch());
    }
    let controller = text(event, fields.controller);
    if controller.is_empty() {
        out.push(Cause::required(fields.controller));
    }
    qualified_name(&json!(controller), fields.controller, &mut out);
    for (field, shown) in [("reportingInstance", "reportingInstance"), ("action", "action"), ("reason", "reason")] {
        let value = text(event, field);
        if value.is_empty() {
            out.push(Cause::required(shown));
        }
        if value.len() > SHORT_LIMIT {
            out.push(Cause::invalid(shown, "", &format!("can have at most {SHORT_LIMIT} characters")));
        }
    }
    if text(event, fields.note).len() > NOTE_LIMIT {
        out.push(Cause::invalid("message", "", &format!("can have at most {NOTE_LIMIT} characters")));
    }
    out
}

/// `events.k8s.io/v1`: the old checks, then a series that counts and was seen, an event time,
/// a known type, and none of the deprecated fields.
fn strict(event: &Value) -> Vec<Cause> {
    let mut out = legacy(event, &EVENTS);
    series(event, &mut out);
    if event["eventTime"].is_null() {
        out.push(Cause::required("eventTime"));
    }
    let kind = text(event, "type");
    if kind != "Normal" && kind != "Warning" {
        out.push(Cause::invalid("type", "", &format!("has invalid value: {kind}")));
    }
    for (field, shown) in [("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count")] {
        if !event[field].is_null() && event[field] != 0 {
            out.push(Cause::invalid(shown, "", "needs to be unset"));
        }
    }
    let source = &event["deprecatedSource"];
    if !text(source, "component").is_empty() || !text(source, "host").is_empty() {
        out.push(Cause::invalid("source", "", "needs to be unset"));
    }
    out
}

fn series(event: &Value, out: &mut Vec<Cause>) {
    let series = &event["series"];
    if series.is_object() {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            out.push(Cause::invalid("series.count", "", "should be at least 2"));
        }
        if series["lastObservedTime"].is_null() {
            out.push(required("series.lastObservedTime", ""));
        }
    }
}

/// What an `events.k8s.io/v1` Event may not change once written: all but its series (checked
/// again when it changes) and its metadata. Refusals name the fields as `v1` does.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["series"] != new["series"] {
        series(new, &mut out);
    }
    const FIXED: &[(&str, &str)] = &[
        ("regarding", "involvedObject"),
        ("reason", "reason"),
        ("note", "message"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("reason", "reason"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingController", "reportingController"),
        ("reportingInstance", "reportingInstance"),
    ];
    for (field, shown) in FIXED {
        if old[*field] != new[*field] {
            out.push(invalid(*shown, &new[*field], "field is immutable"));
        }
    }
    out
}

pub const COLUMNS: &[Column] = &[
    col("Last Seen", "date", 0),
    col("Type", "string", 0),
    col("Reason", "string", 0),
    col("Object", "string", 0),
    col("Subobject", "string", 1),
    col("Source", "string", 1),
    col("Message", "string", 0),
    col("First Seen", "date", 1),
    col("Count", "string", 1),
    Column { name: "Name", type_: "string", format: "name", description: "", priority: 1 },
];

/// Events of both `v1` (`involvedObject`, `message`, `lastTimestamp`) and `events.k8s.io/v1`
/// (`regarding`, `note`, `deprecatedLastTimestamp`); the last sighting is the series' when
/// there is one. Events place their name last, among the wide columns.
pub fn cells(obj: &Value) -> Vec<Value> {
    let first = |fields: &[&str]| fields.iter().map(|f| obj.pointer(f)).find_map(|v| v.filter(|v| v.is_string()).cloned());
    let last_seen = first(&["/series/lastObservedTime", "/lastTimestamp", "/deprecatedLastTimestamp", "/eventTime", "/firstTimestamp"]);
    let first_seen = first(&["/firstTimestamp", "/deprecatedFirstTimestamp", "/eventTime"]);
    let target = if obj["regarding"].is_object() { &obj["regarding"] } else { &obj["involvedObject"] };
    let kind = target["kind"].as_str().unwrap_or_default().to_ascii_lowercase();
    let source = [("/source/component", "/source/host"), ("/reportingController", "/reportingInstance"), ("/deprecatedSource/component", "/deprecatedSource/host")]
        .iter()
        .find_map(|(component, host)| {
            let component = obj.pointer(component)?.as_str().filter(|c| !c.is_empty())?;
            Some(match obj.pointer(host).and_then(Value::as_str).filter(|h| !h.is_empty()) {
                Some(host) => json!(format!("{component}, {host}")),
                None => json!(component),
            })
        });
    let count = obj.pointer("/series/count").or(obj.get("count")).or(obj.get("deprecatedCount")).and_then(Value::as_i64).unwrap_or(1);
    vec![
        last_seen.unwrap_or(Value::Null),
        obj["type"].clone(),
        obj["reason"].clone(),
        json!(format!("{kind}/{}", target["name"].as_str().unwrap_or_default())),
        json!(target["fieldPath"].as_str().unwrap_or_default()),
        source.unwrap_or(Value::Null),
        first(&["/message", "/note"]).unwrap_or(Value::Null),
        first_seen.unwrap_or(Value::Null),
        json!(count),
        obj["metadata"]["name"].clone(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_v1_is_stored_as_a_core_event_and_read_back() {
        let served = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "regarding": {"kind": "Pod"}, "note": "n", "reportingController": "c", "deprecatedCount": 2});
        let stored = (EVENTS_V1_STORED_AS_CORE.to_storage)(served.clone());
        // The source is written empty when there is none, in either version.
        assert_eq!(stored, json!({"apiVersion": "v1", "kind": "Event", "involvedObject": {"kind": "Pod"}, "message": "n", "reportingComponent": "c", "count": 2, "source": {}}));
        let mut read = served.clone();
        read["deprecatedSource"] = json!({});
        assert_eq!((EVENTS_V1_STORED_AS_CORE.from_storage)(stored), read);
        assert_eq!(EVENTS_V1_STORED_AS_CORE.group(), "");
    }
}

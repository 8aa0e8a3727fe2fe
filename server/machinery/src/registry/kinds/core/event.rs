//! Events (`v1` and `events.k8s.io/v1` print alike): kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::col;
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

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

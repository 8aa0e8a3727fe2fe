//! The `Table` form of objects and lists (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`),
//! which kubectl prints: a `Name` column, then the kind's columns, one row per object.
//!
//! Dates: Kubernetes' built-in printers compute `Age` on the server as a human duration
//! (`translateTimestampSince`: "5m", "2d3h") in a column of type `string`, while the default
//! table of kinds without printers has a `Created At` column of type `date` holding the
//! RFC 3339 timestamp. A kind's column of type `date` gets the creation timestamp from the
//! kind's cells; here a `date` column named `Age` is rendered as the human age (and declared
//! `string`, as the built-in printers declare it), any other `date` column keeps the timestamp.
//! Kinds without columns of their own get the default `Name`, `Created At` table.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::query::Params;
use crate::registry::{custom, Column, ResourceInfo};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The default table's columns after `Name` (Kubernetes' `defaultTableConvertor`).
static DEFAULT_COLUMNS: &[Column] =
    &[Column { name: "Created At", type_: "date", format: "", description: CREATED_DESCRIPTION, priority: 0 }];

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Include {
    None,
    Metadata,
    Object,
}

fn include_object(params: &Params) -> ApiResult<Include> {
    match params.get("includeObject").unwrap_or_default() {
        "" | "Metadata" => Ok(Include::Metadata),
        "None" => Ok(Include::None),
        "Object" => Ok(Include::Object),
        other => Err(ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
        ))),
    }
}

/// The kind's columns after `Name` (a custom resource's from its definition).
fn columns(info: &ResourceInfo) -> Cow<'static, [Column]> {
    if let Some(v) = custom::version(info) {
        return Cow::Owned(v.columns.iter().map(|c| c.column).collect());
    }
    match info.ops.strategy.columns {
        [] => Cow::Borrowed(DEFAULT_COLUMNS),
        own => Cow::Borrowed(own),
    }
}

/// What kube-apiserver's printers say each built-in kind's columns hold, by
/// `group/version/resource` and column name (facts, kept as data).
fn descriptions(info: &ResourceInfo) -> Option<&'static HashMap<String, String>> {
    static DESCRIPTIONS: LazyLock<HashMap<String, HashMap<String, String>>> =
        LazyLock::new(|| serde_json::from_str(include_str!("registry/kinds/column_descriptions.json")).unwrap_or_default());
    DESCRIPTIONS.get(&format!("{}/{}", info.api_version(), info.resource))
}

/// Columns shown as the time since their timestamp cell (`5m`), as kubectl prints them (every
/// `date` column of a custom resource, as Kubernetes' custom resource table does).
fn is_age(info: &ResourceInfo, c: &Column) -> bool {
    c.type_ == "date" && (custom::is_custom(info) || matches!(c.name, "Age" | "Last Seen" | "First Seen"))
}

/// Whether the name comes first (most kinds) or the kind places a `Name` column itself.
fn name_first(info: &ResourceInfo) -> bool {
    !columns(info).iter().any(|c| c.name == "Name")
}

fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let name = json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0});
    let cols = columns(info);
    let described = descriptions(info);
    let rest = cols.iter().map(|c| {
        let type_ = if is_age(info, c) { "string" } else { c.type_ };
        let description = described.and_then(|d| d.get(c.name)).map_or(c.description, String::as_str);
        json!({"name": c.name, "type": type_, "format": c.format, "description": description, "priority": c.priority})
    });
    name_first(info).then_some(name).into_iter().chain(rest).collect()
}

fn row(info: &ResourceInfo, obj: &Value, include: Include, now: DateTime<Utc>) -> Value {
    let meta = obj.get("metadata");
    let name = meta.and_then(|m| m.get("name")).cloned().unwrap_or_else(|| json!(""));
    let cells: Vec<Value> = if let Some(v) = custom::version(info) {
        v.cells(obj)
    } else if info.ops.strategy.columns.is_empty() {
        vec![meta.and_then(|m| m.get("creationTimestamp")).cloned().unwrap_or(Value::Null)]
    } else {
        (info.ops.strategy.cells)(obj)
    };
    let name = name_first(info).then_some(name);
    let cols = columns(info);
    let cells = name.into_iter().chain(cols.iter().zip(cells).map(|(c, cell)| {
        if is_age(info, c) {
            json!(age(cell.as_str(), now))
        } else {
            cell
        }
    }));
    let object = match include {
        Include::None => Value::Null,
        Include::Metadata => crate::metadata_form::object(obj),
        Include::Object => obj.clone(),
    };
    json!({"cells": cells.collect::<Vec<_>>(), "object": object})
}

fn table(info: &ResourceInfo, items: &[Value], metadata: Map<String, Value>, params: &Params) -> ApiResult<Value> {
    let include = include_object(params)?;
    let now = Utc::now();
    let rows: Vec<Value> = items.iter().map(|o| row(info, o, include, now)).collect();
    Ok(json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(info),
        "rows": rows,
    }))
}

/// A one-row table for a single object (`kubectl get <kind> <name>`); its resourceVersion is
/// the object's.
pub fn object_table(info: &ResourceInfo, obj: &Value, params: &Params) -> ApiResult<Value> {
    let mut metadata = Map::new();
    if let Some(rv) = obj.get("metadata").and_then(|m| m.get("resourceVersion")) {
        metadata.insert("resourceVersion".into(), rv.clone());
    }
    table(info, std::slice::from_ref(obj), metadata, params)
}

/// The object of a watch event as a one-row table. Kubernetes sends the column definitions
/// with the first event only; kubectl prints headers once either way.
pub fn watch_table(info: &ResourceInfo, obj: &Value, params: &Params) -> ApiResult<Value> {
    object_table(info, obj, params)
}

/// A table for a list, with the list's resourceVersion, continue token and remaining count.
pub fn list_table(
    info: &ResourceInfo,
    items: &[Value],
    rev: u64,
    continue_token: Option<&str>,
    remaining: Option<u64>,
    params: &Params,
) -> ApiResult<Value> {
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), json!(rev.to_string()));
    if let Some(token) = continue_token {
        metadata.insert("continue".into(), json!(token));
    }
    if let Some(n) = remaining {
        metadata.insert("remainingItemCount".into(), json!(n));
    }
    table(info, items, metadata, params)
}

/// The age of an object created at `timestamp`, or `<unknown>` without one.
fn age(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp.and_then(|t| DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => human_duration(now.signed_duration_since(t)),
        None => "<unknown>".into(),
    }
}

/// Kubernetes' `duration.HumanDuration`: two significant units while they are informative.
pub fn human_duration(d: chrono::TimeDelta) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    let days = hours / 24;
    let years = days / 365;
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| match small {
        0 => format!("{big}{unit}"),
        _ => format!("{big}{unit}{small}{small_unit}"),
    };
    match hours {
        h if h < 8 => with(h, "h", minutes % 60, "m"),
        h if h < 48 => format!("{h}h"),
        h if h < 24 * 8 => with(days, "d", h % 24, "h"),
        h if h < 24 * 365 * 2 => format!("{days}d"),
        h if h < 24 * 365 * 8 => with(years, "y", days % 365, "d"),
        _ => format!("{years}y"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_descriptions_are_read() {
        let pods = crate::registry::lookup("", "v1", "pods").unwrap();
        assert!(descriptions(pods).is_some_and(|d| d["Ready"].contains("readiness")));
    }
    use crate::registry::kinds::Strategy;
    use crate::registry::KindOps;
    use chrono::TimeDelta;

    const COLUMNS: &[Column] = &[
        Column { name: "Data", type_: "integer", format: "", description: "", priority: 0 },
        Column { name: "Age", type_: "date", format: "", description: CREATED_DESCRIPTION, priority: 0 },
        Column { name: "Created", type_: "date", format: "", description: "", priority: 1 },
    ];

    fn cells(obj: &Value) -> Vec<Value> {
        let ts = obj["metadata"]["creationTimestamp"].clone();
        vec![json!(obj["data"].as_object().map_or(0, |d| d.len())), ts.clone(), ts]
    }

    fn ops(columns: &'static [Column]) -> &'static KindOps {
        Box::leak(Box::new(KindOps {
            decode: |_, _| Err(String::new()),
            default: |_, _| {},
            validate: |_, _, _| Vec::new(),
            strategy: Strategy { columns, cells, ..Strategy::NONE },
            schema: |g| g.subschema_for::<String>(),
            definition: "io.k8s.api.core.v1.ConfigMap",
        }))
    }

    fn info(columns: &'static [Column]) -> ResourceInfo {
        ResourceInfo {
            group: "",
            version: "v1",
            resource: "configmaps",
            singular: "configmap",
            kind: "ConfigMap",
            namespaced: true,
            short_names: &[],
            categories: &[],
            subresources: &[],
            verbs: &[],
            has_generation: false,
            ops: ops(columns),
            introduced: None,
            stored_as: None,
        }
    }

    fn cm() -> Value {
        let created = (Utc::now() - TimeDelta::seconds(200)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "resourceVersion": "7", "creationTimestamp": created}, "data": {"a": "1"}})
    }

    fn params(q: &str) -> Params {
        Params::parse(Some(q)).unwrap()
    }

    #[test]
    fn list_table_with_kind_columns() {
        let t = list_table(&info(COLUMNS), &[cm()], 42, Some("tok"), Some(3), &params("")).unwrap();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3}));
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(
            defs[0],
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0})
        );
        assert_eq!(defs[2]["type"], "string");
        assert_eq!(defs[3]["type"], "date");
        assert_eq!(defs[3]["priority"], 1);
        let row = &t["rows"][0];
        assert_eq!(row["cells"][0], "c");
        assert_eq!(row["cells"][1], 1);
        assert_eq!(row["cells"][2], "3m20s");
        assert_eq!(row["cells"][3], cm()["metadata"]["creationTimestamp"]);
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(row["object"]["metadata"]["name"], "c");
        assert!(row["object"].get("data").is_none());
    }

    #[test]
    fn default_table_and_object_form() {
        let t = object_table(&info(&[]), &cm(), &params("includeObject=Object")).unwrap();
        assert_eq!(t["metadata"], json!({"resourceVersion": "7"}));
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[1]["name"], "Created At");
        assert_eq!(defs[1]["type"], "date");
        assert_eq!(t["rows"][0]["cells"][1], cm()["metadata"]["creationTimestamp"]);
        assert_eq!(t["rows"][0]["object"]["data"]["a"], "1");
        let t = watch_table(&info(&[]), &cm(), &params("includeObject=None")).unwrap();
        assert_eq!(t["rows"][0]["object"], Value::Null);
        assert_eq!(list_table(&info(&[]), &[], 1, None, None, &params("")).unwrap()["rows"], json!([]));
    }

    #[test]
    fn bad_include_object() {
        let e = object_table(&info(&[]), &cm(), &params("includeObject=All")).unwrap_err();
        assert_eq!(e.code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(
            e.to_string(),
            "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
        );
    }

    #[test]
    fn human_durations() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (7 * 3600 + 60, "7h1m"),
            (8 * 3600 + 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (8 * 86400, "8d"),
            (730 * 86400, "2y"),
            (731 * 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(TimeDelta::seconds(secs)), want, "{secs}s");
        }
        assert_eq!(age(None, Utc::now()), "<unknown>");
        assert_eq!(age(Some("garbage"), Utc::now()), "<unknown>");
    }
}

//! HorizontalPodAutoscalers: served as autoscaling/v2 and autoscaling/v1, stored as v2 with
//! Kubernetes' defaults, and validated (in either version) in their v2 form. v1 knows one metric, the CPU utilization target; Kubernetes keeps
//! everything else a v2 object holds (other metrics, behavior, conditions, current metrics) in
//! v1 annotations, in v1's own shapes, and reads them back, so each version round-trips.

use serde_json::{json, Map, Value};

use crate::error::Cause;
use crate::expr::quantity::{parse as parse_quantity, Quantity};
use crate::registry::convert::StoredAs;
use crate::registry::kinds::fields::{age, at_least, col, dns_label, forbidden, int, invalid, path_segment, required, unsupported, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// Where a v1 object keeps what only v2 has.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The CPU utilization Kubernetes targets when an autoscaler names no metric.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// autoscaling/v2: defaults, validation and kubectl's columns.
pub const STRATEGY: Strategy =
    Strategy { default: defaults, validate, columns: COLUMNS, cells, initial_status: Some(|| json!({"desiredReplicas": 0})), ..Strategy::NONE };

/// autoscaling/v1: its own defaults, validated and printed from its v2 form.
pub const V1_STRATEGY: Strategy = Strategy {
    default: v1_defaults,
    validate: |obj| validate(&v1_to_v2(obj.clone())),
    columns: COLUMNS,
    cells: v1_cells,
    initial_status: Some(|| json!({"currentReplicas": 0, "desiredReplicas": 0})),
    ..Strategy::NONE
};

/// v1 objects are stored as v2.
pub static V1_STORED_AS_V2: StoredAs = StoredAs { api_version: "autoscaling/v2", from_storage: v2_to_v1, to_storage: v1_to_v2 };

/// Kubernetes' v2 defaults: one replica at least, the CPU target when no metric is named, the
/// default scaling rules filled into a `behavior` that is given, and the status's current
/// metrics.
pub fn defaults(obj: &mut Value) {
    // Kubernetes always writes the current metrics, null before the controller measures any.
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        status.entry("currentMetrics").or_insert(Value::Null);
    }
    let spec = &mut obj["spec"];
    if spec["minReplicas"].is_null() {
        spec["minReplicas"] = json!(1);
    }
    if spec["metrics"].as_array().is_none_or(Vec::is_empty) {
        spec["metrics"] = json!([cpu_target(DEFAULT_CPU_UTILIZATION)]);
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        let down = json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (direction, mut rules) in [("scaleUp", up), ("scaleDown", down)] {
            if let Some(given) = behavior.get(direction).and_then(Value::as_object) {
                for (k, v) in given.iter().filter(|(_, v)| !v.is_null()) {
                    rules[k] = v.clone();
                }
            }
            behavior.insert(direction.into(), rules);
        }
    }
}

/// The metric source types, in the order Kubernetes lists them.
const METRIC_TYPES: &[&str] = &["ContainerResource", "External", "Object", "Pods", "Resource"];

/// Replica bounds, the scale target, the metrics and the scaling rules (of a v2 object).
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let min = &spec["minReplicas"];
    at_least(min, "spec.minReplicas", 1, &mut out);
    let max = int(&spec["maxReplicas"]);
    if max == 0 {
        out.push(required("spec.maxReplicas", "must be set and greater than 0"));
    } else if max < 0 {
        out.push(invalid("spec.maxReplicas", &json!(max), "must be greater than or equal to 1"));
    }
    if min.as_i64().is_some_and(|m| max < m) {
        out.push(invalid("spec.maxReplicas", &json!(max), "must be greater than or equal to `minReplicas`"));
    }
    object_reference(&spec["scaleTargetRef"], "spec.scaleTargetRef", &mut out);
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    for (i, m) in metrics.iter().enumerate() {
        metric(m, &format!("spec.metrics[{i}]"), &mut out);
    }
    if min.as_i64() == Some(0) && !metrics.iter().any(|m| m["type"] == "Object" || m["type"] == "External") {
        out.push(forbidden("spec.metrics", "must specify at least one Object or External metric to support scaling to zero replicas"));
    }
    for direction in ["scaleUp", "scaleDown"] {
        scaling_rules(&spec["behavior"][direction], &format!("spec.behavior.{direction}"), &mut out);
    }
    out
}

/// A reference to an object of another version: a kind and a name that fit in a path, and an
/// API version with a group.
fn object_reference(r: &Value, path: &str, out: &mut Vec<Cause>) {
    for field in ["kind", "name"] {
        match r[field].as_str().unwrap_or_default() {
            "" => out.push(Cause::required(format!("{path}.{field}"))),
            _ => path_segment(&r[field], &format!("{path}.{field}"), out),
        }
    }
    let version = r["apiVersion"].as_str().unwrap_or_default();
    let problem = match version.matches('/').count() {
        0 => Some("apiVersion must specify API group".to_string()),
        1 if version.starts_with('/') => Some("apiVersion must specify API group".to_string()),
        1 => None,
        _ => Some(format!("unexpected GroupVersion string: {version}")),
    };
    if let Some(p) = problem {
        out.push(Cause::invalid(format!("{path}.apiVersion"), version, &p));
    }
}

/// One metric: a known type, and the source its type names (and no other), valid.
fn metric(m: &Value, path: &str, out: &mut Vec<Cause>) {
    let kind = m["type"].as_str().unwrap_or_default();
    if kind.is_empty() {
        out.push(required(format!("{path}.type"), "must specify a metric source type"));
    }
    let not_supported = || unsupported(format!("{path}.type"), kind, METRIC_TYPES);
    if !METRIC_TYPES.contains(&kind) {
        out.push(not_supported());
    }
    let present: Vec<&str> = ["object", "external", "pods", "resource", "containerResource"].into_iter().filter(|s| !m[*s].is_null()).collect();
    if let Some(first) = present.first() {
        source(&m[*first], first, &format!("{path}.{first}"), out);
    }
    let expected = source_of(m);
    match expected {
        "" => out.push(not_supported()),
        field if m[field].is_null() => out.push(required(format!("{path}.{field}"), "must populate information for the given metric source")),
        _ => {}
    }
    if present.len() != 1 {
        for other in present.iter().filter(|s| **s != expected) {
            out.push(forbidden(format!("{path}.{other}"), "must populate the given metric source only"));
        }
    }
}

/// A metric source (`object`, `pods`, ...): what it measures and a target of its kind.
fn source(s: &Value, kind: &str, path: &str, out: &mut Vec<Cause>) {
    let t = &s["target"];
    let target = format!("{path}.target");
    match kind {
        "object" => {
            object_reference(&s["describedObject"], &format!("{path}.describedObject"), out);
            metric_name(&s["metric"], &format!("{path}.metric"), out);
            metric_target(t, &target, out);
            if t["value"].is_null() && t["averageValue"].is_null() {
                out.push(required(format!("{target}.averageValue"), "must set either a target value or averageValue"));
            }
        }
        "external" => {
            metric_name(&s["metric"], &format!("{path}.metric"), out);
            metric_target(t, &target, out);
            if t["value"].is_null() && t["averageValue"].is_null() {
                out.push(required(format!("{target}.averageValue"), "must set either a target value for metric or a per-pod target"));
            }
            if !t["value"].is_null() && !t["averageValue"].is_null() {
                out.push(forbidden(format!("{target}.value"), "may not set both a target value for metric and a per-pod target"));
            }
        }
        "pods" => {
            metric_name(&s["metric"], &format!("{path}.metric"), out);
            metric_target(t, &target, out);
            if t["averageValue"].is_null() {
                out.push(required(format!("{target}.averageValue"), "must specify a positive target averageValue"));
            }
        }
        _ => {
            if s["name"].as_str().unwrap_or_default().is_empty() {
                out.push(required(format!("{path}.name"), "must specify a resource name"));
            }
            if kind == "containerResource" {
                match s["container"].as_str().unwrap_or_default() {
                    "" => out.push(required(format!("{path}.container"), "must specify a container")),
                    _ => dns_label(&s["container"], &format!("{path}.container"), out),
                }
            }
            metric_target(t, &target, out);
            if t["averageUtilization"].is_null() && t["averageValue"].is_null() {
                out.push(required(format!("{target}.averageUtilization"), "must set either a target raw value or a target utilization"));
            }
            if !t["averageUtilization"].is_null() && !t["averageValue"].is_null() {
                out.push(forbidden(format!("{target}.averageValue"), "may not set both a target raw value and a target utilization"));
            }
        }
    }
}

/// A metric's name: given, and fit for a path.
fn metric_name(id: &Value, path: &str, out: &mut Vec<Cause>) {
    match id["name"].as_str().unwrap_or_default() {
        "" => out.push(required(format!("{path}.name"), "must specify a metric name")),
        _ => path_segment(&id["name"], &format!("{path}.name"), out),
    }
}

/// A metric target: a known type, positive quantities and a utilization of at least 1%.
fn metric_target(t: &Value, path: &str, out: &mut Vec<Cause>) {
    let kind = t["type"].as_str().unwrap_or_default();
    if kind.is_empty() {
        out.push(required(format!("{path}.type"), "must specify a metric target type"));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&kind) {
        out.push(invalid(format!("{path}.type"), &t["type"], "must be either Utilization, Value, or AverageValue"));
    }
    for field in ["value", "averageValue"] {
        if t[field].as_str().is_some_and(|q| q.starts_with('-') || parse_quantity(q).is_ok_and(|q| q == Quantity::Small { value: 0, scale: 0 })) {
            out.push(invalid(format!("{path}.{field}"), &t[field], "must be positive"));
        }
    }
    if t["averageUtilization"].as_i64().is_some_and(|u| u < 1) {
        out.push(invalid(format!("{path}.averageUtilization"), &t["averageUtilization"], "must be greater than 0"));
    }
}

/// Scaling rules, when given: a stabilization window of at most an hour, and at least one policy,
/// each of a known type with a positive value over a period of at most half an hour.
fn scaling_rules(rules: &Value, path: &str, out: &mut Vec<Cause>) {
    if !rules.is_object() {
        return;
    }
    let window = &rules["stabilizationWindowSeconds"];
    if window.as_i64().is_some_and(|w| w < 0) {
        out.push(invalid(format!("{path}.stabilizationWindowSeconds"), window, "must be greater than or equal to zero"));
    }
    if window.as_i64().is_some_and(|w| w > 3600) {
        out.push(invalid(format!("{path}.stabilizationWindowSeconds"), window, "must be less than or equal to 3600"));
    }
    let policies = rules["policies"].as_array().cloned().unwrap_or_default();
    if policies.is_empty() {
        out.push(required(format!("{path}.policies"), "must specify at least one Policy"));
    }
    for (i, p) in policies.iter().enumerate() {
        let at = format!("{path}.policies[{i}]");
        let kind = p["type"].as_str().unwrap_or_default();
        if kind != "Pods" && kind != "Percent" {
            out.push(unsupported(format!("{at}.type"), kind, &["Percent", "Pods"]));
        }
        let (value, period) = (int(&p["value"]), int(&p["periodSeconds"]));
        if value <= 0 {
            out.push(invalid(format!("{at}.value"), &json!(value), "must be greater than zero"));
        }
        if period <= 0 {
            out.push(invalid(format!("{at}.periodSeconds"), &json!(period), "must be greater than zero"));
        }
        if period > 1800 {
            out.push(invalid(format!("{at}.periodSeconds"), &json!(period), "must be less than or equal to 1800"));
        }
    }
}

/// Kubernetes' v1 default: one replica at least.
pub fn v1_defaults(obj: &mut Value) {
    if obj["spec"]["minReplicas"].is_null() {
        obj["spec"]["minReplicas"] = json!(1);
    }
}

/// A v1 object's table row: the same columns as v2's, from its v2 form.
pub fn v1_cells(obj: &Value) -> Vec<Value> {
    cells(&v1_to_v2(obj.clone()))
}

fn cpu_target(utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource" && metric["resource"]["name"] == "cpu" && metric["resource"]["target"]["averageUtilization"].is_i64()
}

/// Sets `key` to `value` unless it is null.
fn put(map: &mut Map<String, Value>, key: &str, value: &Value) {
    if !value.is_null() {
        map.insert(key.into(), value.clone());
    }
}

/// An object without nulls, built from `(key, value)` pairs.
fn object(pairs: &[(&str, &Value)]) -> Value {
    let mut map = Map::new();
    for (k, v) in pairs {
        put(&mut map, k, v);
    }
    Value::Object(map)
}

/// A v2 object in v1.
fn v2_to_v1(mut obj: Value) -> Value {
    let spec = obj["spec"].take();
    let status = obj["status"].take();
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    let mut annotations: Map<String, Value> = obj["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    for key in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
        annotations.remove(key);
    }
    let others: Vec<Value> = metrics.iter().filter(|m| !is_cpu_utilization(m)).map(metric_to_v1).collect();
    let cpu = metrics.iter().find(|m| is_cpu_utilization(m)).map(|m| m["resource"]["target"]["averageUtilization"].clone());
    let current = status["currentMetrics"].as_array().cloned().unwrap_or_default();
    let mut encode = |key: &str, value: Value| {
        annotations.insert(key.into(), Value::String(value.to_string()));
    };
    if !others.is_empty() {
        encode(METRICS, Value::Array(others));
    }
    if !current.is_empty() {
        encode(CURRENT_METRICS, Value::Array(current.iter().map(status_to_v1).collect()));
    }
    if spec["behavior"].is_object() {
        encode(BEHAVIOR, spec["behavior"].clone());
    }
    if status["conditions"].as_array().is_some_and(|c| !c.is_empty()) {
        encode(CONDITIONS, status["conditions"].clone());
    }
    let current_cpu = current
        .iter()
        .find(|m| m["type"] == "Resource" && m["resource"]["name"] == "cpu")
        .map(|m| m["resource"]["current"]["averageUtilization"].clone());
    obj["apiVersion"] = json!("autoscaling/v1");
    set_annotations(&mut obj, annotations);
    obj["spec"] = object(&[
        ("scaleTargetRef", &spec["scaleTargetRef"]),
        ("minReplicas", &spec["minReplicas"]),
        ("maxReplicas", &spec["maxReplicas"]),
        ("targetCPUUtilizationPercentage", cpu.as_ref().unwrap_or(&Value::Null)),
    ]);
    obj["status"] = object(&[
        ("observedGeneration", &status["observedGeneration"]),
        ("lastScaleTime", &status["lastScaleTime"]),
        ("currentReplicas", &json!(status["currentReplicas"].as_i64().unwrap_or(0))),
        ("desiredReplicas", &json!(status["desiredReplicas"].as_i64().unwrap_or(0))),
        ("currentCPUUtilizationPercentage", current_cpu.as_ref().unwrap_or(&Value::Null)),
    ]);
    obj
}

/// A v1 object in v2.
fn v1_to_v2(mut obj: Value) -> Value {
    let spec = obj["spec"].take();
    let status = obj["status"].take();
    let mut annotations: Map<String, Value> = obj["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    let mut decode = |key: &str| -> Option<Value> { annotations.remove(key).and_then(|v| serde_json::from_str(v.as_str()?).ok()) };
    let others = decode(METRICS);
    let behavior = decode(BEHAVIOR).filter(|b| b.as_object().is_some_and(|b| !b.is_empty()));
    let current = decode(CURRENT_METRICS);
    let conditions = decode(CONDITIONS);
    let mut metrics: Vec<Value> = others.as_ref().and_then(Value::as_array).into_iter().flatten().map(metric_from_v1).collect();
    if let Some(cpu) = spec["targetCPUUtilizationPercentage"].as_i64() {
        metrics.push(cpu_target(cpu));
    }
    if metrics.is_empty() {
        metrics.push(cpu_target(DEFAULT_CPU_UTILIZATION));
    }
    let current_metrics = match (&current, status["currentCPUUtilizationPercentage"].as_i64()) {
        (Some(Value::Array(list)), _) => Some(Value::Array(list.iter().map(status_from_v1).collect())),
        (_, Some(cpu)) => Some(json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}])),
        _ => None,
    };
    obj["apiVersion"] = json!("autoscaling/v2");
    set_annotations(&mut obj, annotations);
    obj["spec"] = object(&[
        ("scaleTargetRef", &spec["scaleTargetRef"]),
        ("minReplicas", &spec["minReplicas"]),
        ("maxReplicas", &spec["maxReplicas"]),
        ("metrics", &Value::Array(metrics)),
        ("behavior", behavior.as_ref().unwrap_or(&Value::Null)),
    ]);
    obj["status"] = object(&[
        ("observedGeneration", &status["observedGeneration"]),
        ("lastScaleTime", &status["lastScaleTime"]),
        ("currentReplicas", &status["currentReplicas"]),
        ("desiredReplicas", &json!(status["desiredReplicas"].as_i64().unwrap_or(0))),
        ("currentMetrics", current_metrics.as_ref().unwrap_or(&Value::Null)),
        ("conditions", conditions.as_ref().unwrap_or(&Value::Null)),
    ]);
    obj
}

fn set_annotations(obj: &mut Value, annotations: Map<String, Value>) {
    let Some(meta) = obj["metadata"].as_object_mut() else { return };
    if annotations.is_empty() {
        meta.remove("annotations");
    } else {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
}

/// A v2 metric's source field name for its type (`Resource` → `resource`).
fn source_of(metric: &Value) -> &'static str {
    match metric["type"].as_str().unwrap_or_default() {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "External" => "external",
        _ => "",
    }
}

/// A v2 `MetricSpec` in v1's shape (the annotation's).
fn metric_to_v1(m: &Value) -> Value {
    let field = source_of(m);
    let s = &m[field];
    let t = &s["target"];
    let source = match field {
        "object" => object(&[
            ("target", &s["describedObject"]),
            ("metricName", &s["metric"]["name"]),
            ("targetValue", if t["value"].is_null() { &Value::Null } else { &t["value"] }),
            ("selector", &s["metric"]["selector"]),
            ("averageValue", &t["averageValue"]),
        ]),
        "pods" => object(&[("metricName", &s["metric"]["name"]), ("targetAverageValue", &t["averageValue"]), ("selector", &s["metric"]["selector"])]),
        "resource" | "containerResource" => object(&[
            ("name", &s["name"]),
            ("container", &s["container"]),
            ("targetAverageUtilization", &t["averageUtilization"]),
            ("targetAverageValue", &t["averageValue"]),
        ]),
        "external" => object(&[
            ("metricName", &s["metric"]["name"]),
            ("metricSelector", &s["metric"]["selector"]),
            ("targetValue", &t["value"]),
            ("targetAverageValue", &t["averageValue"]),
        ]),
        _ => return m.clone(),
    };
    json!({"type": m["type"], field: source})
}

/// A v1 `MetricSpec` (from the annotation) in v2.
fn metric_from_v1(m: &Value) -> Value {
    let field = source_of(m);
    let s = &m[field];
    let identifier = |selector: &str| object(&[("name", &s["metricName"]), ("selector", &s[selector])]);
    let source = match field {
        "object" => {
            let kind = if s["averageValue"].is_null() { "Value" } else { "AverageValue" };
            let target = object(&[("type", &json!(kind)), ("value", &s["targetValue"]), ("averageValue", &s["averageValue"])]);
            json!({"describedObject": s["target"], "metric": identifier("selector"), "target": target})
        }
        "pods" => json!({"metric": identifier("selector"), "target": {"type": "AverageValue", "averageValue": s["targetAverageValue"]}}),
        "resource" | "containerResource" => {
            let kind = if s["targetAverageUtilization"].is_null() { "AverageValue" } else { "Utilization" };
            let target = object(&[("type", &json!(kind)), ("averageUtilization", &s["targetAverageUtilization"]), ("averageValue", &s["targetAverageValue"])]);
            object(&[("name", &s["name"]), ("container", &s["container"]), ("target", &target)])
        }
        "external" => {
            let kind = if s["targetValue"].is_null() { "AverageValue" } else { "Value" };
            let target = object(&[("type", &json!(kind)), ("value", &s["targetValue"]), ("averageValue", &s["targetAverageValue"])]);
            json!({"metric": identifier("metricSelector"), "target": target})
        }
        _ => return m.clone(),
    };
    json!({"type": m["type"], field: source})
}

/// A v2 `MetricStatus` in v1's shape.
fn status_to_v1(m: &Value) -> Value {
    let field = source_of(m);
    let s = &m[field];
    let c = &s["current"];
    let source = match field {
        "object" => object(&[
            ("target", &s["describedObject"]),
            ("metricName", &s["metric"]["name"]),
            ("currentValue", &c["value"]),
            ("selector", &s["metric"]["selector"]),
            ("averageValue", &c["averageValue"]),
        ]),
        "pods" => object(&[("metricName", &s["metric"]["name"]), ("currentAverageValue", &c["averageValue"]), ("selector", &s["metric"]["selector"])]),
        "resource" | "containerResource" => object(&[
            ("name", &s["name"]),
            ("container", &s["container"]),
            ("currentAverageUtilization", &c["averageUtilization"]),
            ("currentAverageValue", &c["averageValue"]),
        ]),
        "external" => object(&[
            ("metricName", &s["metric"]["name"]),
            ("metricSelector", &s["metric"]["selector"]),
            ("currentValue", &c["value"]),
            ("currentAverageValue", &c["averageValue"]),
        ]),
        _ => return m.clone(),
    };
    json!({"type": m["type"], field: source})
}

/// A v1 `MetricStatus` (from the annotation) in v2.
fn status_from_v1(m: &Value) -> Value {
    let field = source_of(m);
    let s = &m[field];
    let identifier = |selector: &str| object(&[("name", &s["metricName"]), ("selector", &s[selector])]);
    let source = match field {
        "object" => json!({"describedObject": s["target"], "metric": identifier("selector"),
            "current": object(&[("value", &s["currentValue"]), ("averageValue", &s["averageValue"])])}),
        "pods" => json!({"metric": identifier("selector"), "current": object(&[("averageValue", &s["currentAverageValue"])])}),
        "resource" | "containerResource" => object(&[
            ("name", &s["name"]),
            ("container", &s["container"]),
            ("current", &object(&[("averageUtilization", &s["currentAverageUtilization"]), ("averageValue", &s["currentAverageValue"])])),
        ]),
        "external" => json!({"metric": identifier("metricSelector"),
            "current": object(&[("value", &s["currentValue"]), ("averageValue", &s["currentAverageValue"])])}),
        _ => return m.clone(),
    };
    json!({"type": m["type"], field: source})
}

pub const COLUMNS: &[Column] = &[
    col("Reference", "string", 0),
    col("Targets", "string", 0),
    col("MinPods", "string", 0),
    col("MaxPods", "string", 0),
    col("Replicas", "string", 0),
    AGE,
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let target = &spec["scaleTargetRef"];
    let targets = targets(spec, &obj["status"]["currentMetrics"]);
    vec![
        json!(format!("{}/{}", target["kind"].as_str().unwrap_or_default(), target["name"].as_str().unwrap_or_default())),
        json!(targets),
        json!(spec["minReplicas"].as_i64().map_or("<unset>".to_string(), |n| n.to_string())),
        json!(spec["maxReplicas"].as_i64().unwrap_or(0)),
        json!(obj["status"]["currentReplicas"].as_i64().unwrap_or(0)),
        age(obj),
    ]
}

/// Each metric as `name: current/target` (`<unknown>` until measured), as kubectl prints
/// resource metrics; other kinds of metric are counted.
fn targets(spec: &Value, current: &Value) -> String {
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    if metrics.is_empty() {
        return "<none>".into();
    }
    let shown: Vec<String> = metrics
        .iter()
        .map(|m| {
            let resource = &m["resource"];
            let name = resource["name"].as_str().unwrap_or_default();
            let target = &resource["target"];
            let measured = current.as_array().into_iter().flatten().find(|c| c["resource"]["name"] == name).map(|c| &c["resource"]["current"]);
            match (m["type"].as_str(), target["averageUtilization"].as_i64()) {
                (Some("Resource"), Some(want)) => {
                    let now = measured.and_then(|c| c["averageUtilization"].as_i64()).map_or("<unknown>".to_string(), |n| format!("{n}%"));
                    format!("{name}: {now}/{want}%")
                }
                (Some("Resource"), None) => {
                    let want = target["averageValue"].as_str().or(target["value"].as_str()).unwrap_or_default();
                    let now = measured.and_then(|c| c["averageValue"].as_str()).unwrap_or("<unknown>");
                    format!("{name}: {now}/{want}")
                }
                _ => format!("{}: <unknown>", m["type"].as_str().unwrap_or_default().to_lowercase()),
            }
        })
        .collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}},
            },
            "status": {
                "currentReplicas": 3, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}],
            },
        })
    }

    #[test]
    fn v1_shows_the_cpu_target_and_keeps_the_rest_in_annotations() {
        let v1 = v2_to_v1(v2());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["team"], "a");
        let others: Value = serde_json::from_str(annotations[METRICS].as_str().unwrap()).unwrap();
        assert_eq!(others, json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "1k"}}]));
        assert!(annotations[BEHAVIOR].as_str().unwrap().contains("300"));
        assert!(annotations[CONDITIONS].as_str().unwrap().contains("AbleToScale"));
    }

    #[test]
    fn each_version_round_trips() {
        let original = v2();
        let back = v1_to_v2(v2_to_v1(original.clone()));
        assert_eq!(back["metadata"], original["metadata"]);
        assert_eq!(back["spec"], original["spec"]);
        assert_eq!(back["status"]["conditions"], original["status"]["conditions"]);
        assert_eq!(back["status"]["currentMetrics"], original["status"]["currentMetrics"]);
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "a"}, "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 0, "desiredReplicas": 0}});
        assert_eq!(v2_to_v1(v1_to_v2(v1.clone())), v1);
    }

    #[test]
    fn a_v1_object_without_a_target_gets_the_default_cpu_metric() {
        let v1 = json!({"metadata": {"name": "a"}, "spec": {"maxReplicas": 3}});
        assert_eq!(v1_to_v2(v1)["spec"]["metrics"], json!([cpu_target(80)]));
    }

    #[test]
    fn v2_defaults_are_kubernetes() {
        let mut obj = json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        defaults(&mut obj);
        assert_eq!(obj["spec"]["minReplicas"], 1);
        assert_eq!(obj["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80);
        assert_eq!(obj["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 60);
        assert_eq!(obj["spec"]["behavior"]["scaleDown"]["policies"][0]["type"], "Percent");
        assert_eq!(obj["spec"]["behavior"]["scaleUp"]["policies"].as_array().unwrap().len(), 2);
    }
}

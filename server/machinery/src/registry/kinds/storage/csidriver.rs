//! CSIDrivers: defaults, fields of gates that are off dropped, token request validation and its
//! warning, the fields fixed at creation, the generation counting spec changes, kubectl's
//! columns, and a DELETE answered with the driver; and how a driver is named where other kinds
//! name one.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, duplicate, invalid, set, unchanged, AGE, IMMUTABLE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated, printed and deleted.
pub const STRATEGY: Strategy =
    Strategy { default: defaults, validate, update, columns: COLUMNS, cells, returns_deleted: true, prepare_create: Some(drop_gated), warnings: Some(warnings), ..Strategy::NONE };

/// The spec fields that exist only with their feature gate on.
const GATED_FIELDS: &[(&str, &str)] = &[
    ("seLinuxMount", "SELinuxMountReadWriteOncePod"),
    ("nodeAllocatableUpdatePeriodSeconds", "MutableCSINodeAllocatableCount"),
    ("serviceAccountTokenInSecrets", "CSIServiceAccountTokenSecrets"),
    ("preventPodSchedulingIfMissing", "VolumeLimitScaling"),
];

/// A new driver loses the fields whose gate is off; an update loses only those the stored
/// driver did not have (so a downgrade keeps them).
fn drop_gated_from(spec: &mut Value, old_spec: Option<&Value>) {
    let Some(spec) = spec.as_object_mut() else { return };
    for (field, gate) in GATED_FIELDS {
        if !crate::features::enabled(gate) && old_spec.is_none_or(|o| o.get(*field).is_none()) {
            spec.remove(*field);
        }
    }
}

fn drop_gated(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        drop_gated_from(spec, None);
    }
}

const TOKENS_IN_SECRETS: &str =
    "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes";

/// Token requests (new or changed) without `serviceAccountTokenInSecrets` are warned about.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let spec = &obj["spec"];
    let requests_set = spec["tokenRequests"].as_array().is_some_and(|r| !r.is_empty());
    let changed = old.is_none_or(|o| o["spec"]["tokenRequests"] != spec["tokenRequests"]);
    match crate::features::enabled("CSIServiceAccountTokenSecrets") && requests_set && changed && spec.get("serviceAccountTokenInSecrets").is_none() {
        true => vec![TOKENS_IN_SECRETS.to_string()],
        false => Vec::new(),
    }
}

/// A driver is attached, told nothing of pods, not republished, not capacity-tracked, given
/// the volume's fsGroup when its type and access mode allow it, and serves persistent volumes.
pub fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    set(spec, "attachRequired", json!(true));
    set(spec, "podInfoOnMount", json!(false));
    set(spec, "storageCapacity", json!(false));
    set(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    set(spec, "requiresRepublish", json!(false));
    set(spec, "seLinuxMount", json!(false));
    if spec["volumeLifecycleModes"].as_array().is_none_or(Vec::is_empty) {
        spec["volumeLifecycleModes"] = json!(["Persistent"]);
    }
}

/// Token requests: one per audience, each lasting from 10 minutes to 2^32 seconds.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let mut audiences = Vec::new();
    for (i, request) in spec["tokenRequests"].as_array().into_iter().flatten().enumerate() {
        let audience = request["audience"].as_str().unwrap_or_default();
        if audiences.contains(&audience) {
            out.push(duplicate(format!("spec.tokenRequests[{i}].audience"), &json!(audience)));
            continue;
        }
        audiences.push(audience);
        let seconds = &request["expirationSeconds"];
        let field = format!("spec.tokenRequests[{i}].expirationSeconds");
        match seconds.as_i64() {
            Some(s) if s < 600 => out.push(invalid(field, seconds, "may not specify a duration less than 10 minutes")),
            Some(s) if s > 1 << 32 => out.push(invalid(field, seconds, "may not specify a duration larger than 2^32 seconds")),
            _ => {}
        }
    }
    let period = &spec["nodeAllocatableUpdatePeriodSeconds"];
    if period.as_i64().is_some_and(|p| p < 10) {
        out.push(invalid("spec.nodeAllocatableUpdatePeriodSeconds", period, "must be greater than or equal to 10 seconds"));
    }
    out
}

/// A CSI driver's name: required, at most 63 characters, a DNS subdomain once lowercased.
pub(crate) fn driver_name(v: &Value, field: &str, out: &mut Vec<Cause>) {
    let name = v.as_str().unwrap_or_default();
    if name.is_empty() {
        out.push(Cause::required(field));
        return;
    }
    if name.len() > 63 {
        out.push(Cause::new("FieldValueTooLong", field, "Too long: may not be more than 63 bytes"));
    }
    if !crate::meta::is_dns_subdomain(&name.to_lowercase()) {
        out.push(Cause::invalid(field, name, crate::meta::DNS1123_SUBDOMAIN));
    }
}

/// Whether the driver needs attaching and the volumes it serves stay as created; a change of
/// the spec counts a generation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(spec) = new.get_mut("spec") {
        drop_gated_from(spec, Some(&old["spec"]));
    }
    if old["spec"]["attachRequired"] != new["spec"]["attachRequired"] {
        out.push(invalid("spec.attachedRequired", &new["spec"]["attachRequired"], IMMUTABLE));
    }
    unchanged(old, new, "/spec/volumeLifecycleModes", &mut out);
    let generation = old["metadata"]["generation"].as_i64();
    let generation = if old["spec"] == new["spec"] { generation } else { Some(generation.unwrap_or(0) + 1) };
    if let Some(g) = generation {
        new["metadata"]["generation"] = json!(g);
    }
    out
}

pub const COLUMNS: &[Column] = &[
    col("AttachRequired", "boolean", 0),
    col("PodInfoOnMount", "boolean", 0),
    col("StorageCapacity", "boolean", 0),
    col("TokenRequests", "string", 0),
    col("RequiresRepublish", "boolean", 0),
    col("Modes", "string", 0),
    AGE,
];

/// The driver's flags, its token audiences (`<unset>` without token requests) and volume
/// lifecycle modes.
pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let flag = |key: &str, default: bool| json!(spec[key].as_bool().unwrap_or(default));
    let texts = |list: &Value, key: Option<&str>| -> Vec<String> {
        list.as_array().into_iter().flatten().filter_map(|v| key.map_or(v, |k| &v[k]).as_str()).map(str::to_string).collect()
    };
    let tokens = match spec["tokenRequests"].is_array() {
        true => texts(&spec["tokenRequests"], Some("audience")).join(","),
        false => "<unset>".into(),
    };
    let modes = texts(&spec["volumeLifecycleModes"], None).join(",");
    vec![
        flag("attachRequired", true),
        flag("podInfoOnMount", false),
        flag("storageCapacity", false),
        json!(tokens),
        flag("requiresRepublish", false),
        json!(if modes.is_empty() { "<none>".to_string() } else { modes }),
        age(obj),
    ]
}

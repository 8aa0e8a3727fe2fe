//! A CustomResourceDefinition as Kubernetes defaults and validates it: its name is
//! `plural.group`, the group a domain, names DNS labels, one storage version among unique
//! versions, and each version's `openAPIV3Schema` structural (a type on every node, an object at
//! the root, `metadata` limited to `name` and `generateName`, patterns that compile).

use serde_json::{json, Value};

/// The finalizer that holds a definition until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

use super::jsonpath::JsonPath;
use super::schema::Structural;
use crate::error::Cause;
use crate::meta::{is_dns_label, DNS1035_LABEL as DNS1035};
use crate::registry::kinds::{go_json, Strategy};

/// How definitions are defaulted, validated, updated and deleted; a new one starts with no
/// names accepted and no conditions, its storage version recorded. (kube-apiserver writes the
/// empty conditions as `null`, which `kubectl wait --for condition=established` takes for an
/// error rather than for "not yet"; this server leaves them out until the definitions'
/// controller sets them, so a wait that starts first waits.)
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update: |old, new| {
        let mut out = Vec::new();
        crate::registry::kinds::fields::unchanged(old, new, "/spec/scope", &mut out);
        record_storage_version(new);
        out
    },
    initial_status: Some(|| json!({"acceptedNames": {"plural": "", "kind": ""}})),
    marks_deletion: Some(mark_deleted),
    ..Strategy::NONE
};

/// A definition's first delete, as its Kubernetes registry marks it: the time, the finalizer
/// that holds it until its custom resources are gone, and the `Terminating` condition; no grace
/// period, no new generation.
fn mark_deleted(crd: &mut Value) {
    crd["metadata"]["deletionTimestamp"] = json!(crate::meta::now());
    let finalizers = &mut crd["metadata"]["finalizers"];
    match finalizers.as_array_mut() {
        Some(list) if list.iter().any(|f| f == CLEANUP_FINALIZER) => {}
        Some(list) => list.push(json!(CLEANUP_FINALIZER)),
        None => *finalizers = json!([CLEANUP_FINALIZER]),
    }
    set_condition(&mut crd["status"], "Terminating", true, "InstanceDeletionPending", "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon");
}

/// Sets condition `kind`, keeping its transition time while its status stays.
pub fn set_condition(status: &mut Value, kind: &str, on: bool, reason: &str, message: &str) {
    let value = if on { "True" } else { "False" };
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    let since = conditions
        .iter()
        .find(|c| c["type"] == kind && c["status"] == value)
        .map(|c| c["lastTransitionTime"].clone())
        .unwrap_or_else(|| json!(crate::meta::now()));
    // A condition keeps its place, as Kubernetes' helper sets it.
    let condition = json!({"type": kind, "status": value, "reason": reason, "message": message, "lastTransitionTime": since});
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
    status["conditions"] = json!(conditions);
}


/// Kubernetes' defaults: singular and listKind from the kind, the `None` conversion (a
/// webhook Service's port 443); schema flags that are false left out, as Kubernetes' JSON
/// leaves them (a Protobuf body carries them).
pub fn defaults(crd: &mut Value) {
    for version in crd.get_mut("spec").and_then(|s| s.get_mut("versions")).and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(schema) = version.get_mut("schema").and_then(|s| s.get_mut("openAPIV3Schema")) {
            drop_false_flags(schema);
        }
    }
    let names = &mut crd["spec"]["names"];
    if let Some(kind) = names["kind"].as_str().map(str::to_string) {
        if names["singular"].as_str().is_none_or(str::is_empty) {
            names["singular"] = json!(kind.to_lowercase());
        }
        if names["listKind"].as_str().is_none_or(str::is_empty) {
            names["listKind"] = json!(format!("{kind}List"));
        }
    }
    if crd.get("status").is_some() {
        record_storage_version(crd);
    }
    if crd["spec"]["conversion"]["strategy"].as_str().is_none() {
        crd["spec"]["conversion"] = json!({"strategy": "None"});
    }
    if let Some(service) = crd.pointer_mut("/spec/conversion/webhook/clientConfig/service").and_then(Value::as_object_mut) {
        service.entry("port").or_insert(json!(443));
    }
}

/// The storage version joins `status.storedVersions` when it is not there yet: objects stored at
/// every version the list names may remain.
fn record_storage_version(crd: &mut Value) {
    let Some(version) = crd["spec"]["versions"].as_array().into_iter().flatten().find(|v| v["storage"] == true).map(|v| v["name"].clone()) else { return };
    let stored = &mut crd["status"]["storedVersions"];
    match stored.as_array_mut() {
        Some(versions) if versions.contains(&version) => {}
        Some(versions) => versions.push(version),
        None => *stored = json!([version]),
    }
}

/// The schema flags Kubernetes omits when false, in every node.
const OMITTED_WHEN_FALSE: &[&str] =
    &["nullable", "uniqueItems", "exclusiveMaximum", "exclusiveMinimum", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"];

fn drop_false_flags(node: &mut Value) {
    let Some(map) = node.as_object_mut() else { return };
    map.retain(|k, v| !(OMITTED_WHEN_FALSE.contains(&k.as_str()) && *v == Value::Bool(false)));
    for key in ["properties", "patternProperties", "definitions"] {
        for child in map.get_mut(key).and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut()) {
            drop_false_flags(child);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for child in map.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            drop_false_flags(child);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        match map.get_mut(key) {
            Some(Value::Array(list)) => list.iter_mut().for_each(drop_false_flags),
            Some(child) => drop_false_flags(child),
            None => {}
        }
    }
}

/// Every problem of the definition, as 422 causes.
pub fn validate(crd: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    if name != format!("{plural}.{group}") {
        causes.push(Cause::invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
    }
    if group.is_empty() {
        causes.push(Cause::required("spec.group"));
    } else if !group.contains('.') {
        causes.push(Cause::invalid("spec.group", group, "should be a domain with at least one dot"));
    } else if !crate::meta::is_dns_subdomain(group) {
        causes.push(Cause::invalid("spec.group", group, crate::meta::DNS1123_SUBDOMAIN));
    }
    for field in ["plural", "singular"] {
        match names[field].as_str().unwrap_or_default() {
            "" => causes.push(Cause::required(format!("spec.names.{field}"))),
            v if !is_dns_label(v, 63, true) => causes.push(Cause::invalid(format!("spec.names.{field}"), v, DNS1035)),
            _ => {}
        }
    }
    for field in ["kind", "listKind"] {
        match names[field].as_str().unwrap_or_default() {
            "" => causes.push(Cause::required(format!("spec.names.{field}"))),
            v if !is_dns_label(&v.to_lowercase(), 63, true) => causes.push(Cause::invalid(
                format!("spec.names.{field}"),
                v,
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
            )),
            _ => {}
        }
    }
    if names["kind"].as_str().is_some_and(|k| !k.is_empty() && names["listKind"].as_str() == Some(k)) {
        causes.push(Cause::invalid("spec.names.listKind", names["listKind"].as_str().unwrap_or_default(), "kind and listKind may not be the same"));
    }
    for (i, short) in names["shortNames"].as_array().into_iter().flatten().enumerate() {
        let s = short.as_str().unwrap_or_default();
        if !is_dns_label(s, 63, true) {
            causes.push(Cause::invalid(format!("spec.names.shortNames[{i}]"), s, DNS1035));
        }
    }
    match spec["scope"].as_str().unwrap_or_default() {
        "Namespaced" | "Cluster" => {}
        "" => causes.push(Cause::required("spec.scope")),
        other => causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""),
        )),
    }
    versions(spec, &mut causes);
    super::conversion::validate(spec, &mut causes);
    stored_versions(crd, &mut causes);
    causes
}

/// `status.storedVersions`: at least one, the storage version among them, and each still a
/// version of the spec.
fn stored_versions(crd: &Value, causes: &mut Vec<Cause>) {
    let stored = &crd["status"]["storedVersions"];
    let list: Vec<&str> = stored.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if list.is_empty() {
        causes.push(Cause::new("FieldValueInvalid", "status.storedVersions", format!("Invalid value: {}: must have at least one stored version", if stored.is_array() { "[]" } else { "null" })));
        return;
    }
    let versions = crd["spec"]["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
    for v in versions {
        let name = v["name"].as_str().unwrap_or_default();
        if v["storage"] == true && !list.contains(&name) {
            causes.push(Cause::new("FieldValueInvalid", "status.storedVersions", format!("Invalid value: {stored}: must have the storage version {name}")));
        }
    }
    for (i, v) in list.iter().enumerate().filter(|(_, v)| !versions.iter().any(|s| s["name"] == **v)) {
        causes.push(Cause::invalid(
            format!("status.storedVersions[{i}]"),
            v,
            &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
}

/// The versions as Kubernetes' internal type prints them: what every version has alike
/// (schema, subresources, printer columns, selectable fields) moved up to the spec, so `null` here.
fn versions_shown(versions: &[Value]) -> String {
    let mut internal = versions.to_vec();
    for field in ["schema", "subresources", "additionalPrinterColumns", "selectableFields"] {
        if versions.iter().all(|v| v.get(field) == versions[0].get(field)) {
            internal.iter_mut().filter_map(Value::as_object_mut).for_each(|v| {
                v.remove(field);
            });
        }
    }
    let shown: Vec<String> = internal.iter().map(|v| go_json::compact(v, "apiextensions.CustomResourceDefinitionVersion")).collect();
    format!("[{}]", shown.join(","))
}

fn versions(spec: &Value, causes: &mut Vec<Cause>) {
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::invalid("spec.versions", "null", "must have exactly one version marked as storage version"));
        return;
    }
    let storage = versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count();
    if storage != 1 {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.versions",
            format!("Invalid value: {}: must have exactly one version marked as storage version", versions_shown(&versions)),
        ));
    }
    // Kubernetes validates a part every version has alike once, where it keeps it then: at
    // `spec` (`spec.validation` for the schema).
    let alike = |field: &str| versions.iter().all(|v| v.get(field) == versions[0].get(field));
    let (columns_alike, subresources_alike, fields_alike) = (alike("additionalPrinterColumns"), alike("subresources"), alike("selectableFields"));
    let schema_alike = alike("schema") && !versions[0]["schema"]["openAPIV3Schema"].is_null();
    let first = &versions[0];
    if columns_alike {
        printer_columns(&first["additionalPrinterColumns"], "spec", causes);
    }
    if subresources_alike {
        scale(&first["subresources"]["scale"], "spec", causes);
    }
    if fields_alike {
        selectable_fields(&first["selectableFields"], "spec", causes);
    }
    if schema_alike {
        structural(&first["schema"]["openAPIV3Schema"], "spec.validation.openAPIV3Schema", causes);
    }
    let mut seen = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = v["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            causes.push(Cause::required(format!("{path}.name")));
        } else if !is_dns_label(name, 63, true) {
            causes.push(Cause::invalid(format!("{path}.name"), name, DNS1035));
        } else if seen.contains(&name) {
            causes.push(Cause::new("FieldValueDuplicate", format!("{path}.name"), format!("Duplicate value: \"{name}\"")));
        }
        seen.push(name);
        if !columns_alike {
            printer_columns(&v["additionalPrinterColumns"], &path, causes);
        }
        if !subresources_alike {
            scale(&v["subresources"]["scale"], &path, causes);
        }
        if !fields_alike {
            selectable_fields(&v["selectableFields"], &path, causes);
        }
        let schema_path = format!("{path}.schema.openAPIV3Schema");
        match v["schema"].get("openAPIV3Schema") {
            None | Some(Value::Null) => causes.push(Cause::required(schema_path)),
            Some(_) if schema_alike => {}
            Some(schema) => structural(schema, &schema_path, causes),
        }
    }
}

/// At most 8 selectable fields, each a simple path (`.spec.color`).
fn selectable_fields(fields: &Value, version_path: &str, causes: &mut Vec<Cause>) {
    let list = fields.as_array().cloned().unwrap_or_default();
    if list.len() > 8 {
        causes.push(Cause::new("FieldValueTooMany", format!("{version_path}.selectableFields"), format!("Too many: {}: must have at most 8 items", list.len())));
    }
    for (i, f) in list.iter().enumerate() {
        let path = f["jsonPath"].as_str().unwrap_or_default();
        let simple = path.strip_prefix('.').is_some_and(|p| p.split('.').all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')));
        if path.is_empty() {
            causes.push(Cause::required(format!("{version_path}.selectableFields[{i}].jsonPath")));
        } else if !simple {
            causes.push(Cause::invalid(format!("{version_path}.selectableFields[{i}].jsonPath"), path, "must be a simple json path to a field, e.g. .spec.color"));
        }
    }
}

/// The scale subresource's paths: replicas under `.spec` and `.status`, the selector under either.
fn scale(scale: &Value, version_path: &str, causes: &mut Vec<Cause>) {
    if !scale.is_object() {
        return;
    }
    let path = format!("{version_path}.subresources.scale");
    for (field, under) in [("specReplicasPath", &[".spec."][..]), ("statusReplicasPath", &[".status."]), ("labelSelectorPath", &[".spec.", ".status."])] {
        match scale[field].as_str() {
            None if field == "labelSelectorPath" => {}
            None | Some("") => causes.push(Cause::required(format!("{path}.{field}"))),
            Some(p) if !under.iter().any(|u| p.starts_with(u)) || p.contains('[') => causes.push(Cause::invalid(
                format!("{path}.{field}"),
                p,
                &format!("should be a json path under {}", under.iter().map(|u| u.trim_end_matches('.')).collect::<Vec<_>>().join(" or ")),
            )),
            Some(_) => {}
        }
    }
}

/// Each printer column needs a name, a known type and a JSONPath that parses.
fn printer_columns(columns: &Value, version_path: &str, causes: &mut Vec<Cause>) {
    for (j, c) in columns.as_array().into_iter().flatten().enumerate() {
        let path = format!("{version_path}.additionalPrinterColumns[{j}]");
        if c["name"].as_str().is_none_or(str::is_empty) {
            causes.push(Cause::required(format!("{path}.name")));
        }
        match c["type"].as_str().unwrap_or_default() {
            "integer" | "number" | "string" | "boolean" | "date" => {}
            "" => causes.push(Cause::required(format!("{path}.type"))),
            other => causes.push(Cause::new(
                "FieldValueNotSupported",
                format!("{path}.type"),
                format!("Unsupported value: \"{other}\": supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\""),
            )),
        }
        match c["jsonPath"].as_str().unwrap_or_default() {
            "" => causes.push(Cause::required(format!("{path}.JSONPath"))),
            p if JsonPath::parse(p).is_err() => causes.push(Cause::invalid(format!("{path}.JSONPath"), p, "must be a simple json path")),
            _ => {}
        }
    }
}

/// The structural-schema rules this server enforces, with Kubernetes' paths and words.
fn structural(schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    match schema["type"].as_str().unwrap_or_default() {
        "object" => {}
        "" => causes.push(Cause::new("FieldValueRequired", format!("{path}.type"), "Required value: must not be empty at the root")),
        other => causes.push(Cause::new(
            "FieldValueInvalid",
            format!("{path}.type"),
            format!("Invalid value: \"{other}\": must be object at the root"),
        )),
    }
    if let Some(meta) = schema["properties"].get("metadata") {
        let allowed = meta["properties"].as_object().is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
        let other_keys = meta.as_object().is_some_and(|m| m.keys().any(|k| !["type", "properties", "description"].contains(&k.as_str())));
        if !allowed || other_keys {
            causes.push(Cause::new(
                "FieldValueForbidden",
                format!("{path}.properties[metadata]"),
                "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    node(schema, path, true, causes);
    match Structural::compile(schema) {
        Ok(compiled) => causes.extend(super::cost::check_schema(&compiled, path)),
        Err((at, message)) if !at.is_empty() => causes.push(Cause::new("FieldValueInvalid", format!("{path}{at}"), message)),
        Err((_, e)) => causes.push(Cause::new("FieldValueInvalid", path.to_string(), format!("Invalid value: \"\": must be a valid schema: {e}"))),
    }
}

/// One node: a type unless it is int-or-string or preserves unknown fields; properties and
/// additionalProperties not both; children alike (patterns and rules compile in
/// [`Structural::compile`]).
fn node(schema: &Value, path: &str, root: bool, causes: &mut Vec<Cause>) {
    let t = schema["type"].as_str().unwrap_or_default();
    let exempt = schema["x-kubernetes-int-or-string"] == true || schema["x-kubernetes-preserve-unknown-fields"] == true;
    if !root && t.is_empty() && !exempt {
        causes.push(Cause::new("FieldValueRequired", format!("{path}.type"), "Required value: must not be empty for specified object fields"));
    }
    if !["", "object", "array", "string", "integer", "number", "boolean"].contains(&t) {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("{path}.type"),
            format!("Unsupported value: \"{t}\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
        ));
    }
    if schema.get("properties").is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty())) && schema["additionalProperties"].is_object() {
        causes.push(Cause::new("FieldValueForbidden", format!("{path}.additionalProperties"), "Forbidden: additionalProperties and properties are mutual exclusive"));
    }
    if t == "array" && schema.get("items").is_none() {
        causes.push(Cause::new("FieldValueRequired", format!("{path}.items"), "Required value: must be specified"));
    }
    for (k, child) in schema["properties"].as_object().into_iter().flatten() {
        node(child, &format!("{path}.properties[{k}]"), false, causes);
    }
    if schema["additionalProperties"].is_object() {
        node(&schema["additionalProperties"], &format!("{path}.additionalProperties"), false, causes);
    }
    if schema["items"].is_object() {
        node(&schema["items"], &format!("{path}.items"), false, causes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
                }}}]
            },
            "status": {}
        })
    }

    #[test]
    fn a_good_definition_passes_after_defaults() {
        let mut c = crd();
        defaults(&mut c);
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert!(validate(&c).is_empty(), "{:?}", validate(&c));
    }

    #[test]
    fn false_flags_are_left_out_as_kubernetes_leaves_them() {
        let mut c = crd();
        let spec = &mut c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        spec["nullable"] = json!(false);
        spec["properties"]["size"]["x-kubernetes-int-or-string"] = json!(false);
        spec["properties"]["size"]["uniqueItems"] = json!(true);
        defaults(&mut c);
        let spec = &c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec, &json!({"type": "object", "properties": {"size": {"type": "integer", "uniqueItems": true}}}));
    }

    #[test]
    fn a_part_every_version_has_alike_is_validated_once_at_spec() {
        let mut c = crd();
        defaults(&mut c);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["type"] = json!("int");
        c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Size", "type": "int", "jsonPath": ".spec.size"}]);
        let mut second = c["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        second["storage"] = json!(false);
        c["spec"]["versions"].as_array_mut().unwrap().push(second);
        let fields = |c: &Value| validate(c).into_iter().map(|c| c.field).collect::<Vec<_>>();
        assert_eq!(
            fields(&c),
            ["spec.additionalPrinterColumns[0].type", "spec.validation.openAPIV3Schema.properties[spec].properties[size].type"]
        );
        // Versions that differ are validated each at its own place.
        c["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["description"] = json!("the second");
        c["spec"]["versions"][1]["additionalPrinterColumns"] = json!([]);
        assert_eq!(
            fields(&c),
            [
                "spec.versions[0].additionalPrinterColumns[0].type",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type",
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[size].type"
            ]
        );
    }

    #[test]
    fn each_problem_is_a_cause() {
        let mut c = crd();
        defaults(&mut c);
        c["metadata"]["name"] = json!("gadgets.example.com");
        c["spec"]["scope"] = json!("Global");
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = json!({"pattern": "("});
        let fields: Vec<String> = validate(&c).into_iter().map(|c| c.field).collect();
        // (Its stored version was recorded by the defaults, before the spec lost it.)
        assert_eq!(
            fields,
            vec![
                "metadata.name",
                "spec.scope",
                "spec.versions",
                "spec.validation.openAPIV3Schema.properties[spec].properties[size].type",
                "spec.validation.openAPIV3Schema.properties[spec].properties[size].pattern",
            ]
        );
    }
}

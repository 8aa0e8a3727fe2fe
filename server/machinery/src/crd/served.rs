//! Which custom resources this replica serves: an apply observer of the definitions that
//! compiles each established definition's versions once (when it changes) and publishes the
//! registry's custom snapshot, so every replica serves a definition as soon as it applies the
//! write that established it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use raft_store::{ApplyObserver, Object};
use serde_json::{json, Value};

use super::conversion::Conversion;
use super::jsonpath::JsonPath;
use super::schema::Structural;
use crate::registry::custom::{self, CustomVersion, Names, PrinterColumn};
use crate::registry::{Column, ResourceInfo};

/// Where definitions are stored.
pub const PREFIX: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions/";

type Entries = Vec<(&'static ResourceInfo, Arc<CustomVersion>)>;

/// The served versions of each established definition, by storage key.
#[derive(Default)]
pub struct ServedDefinitions {
    by_key: Mutex<BTreeMap<String, Entries>>,
}

impl ServedDefinitions {
    fn publish(&self, by_key: &BTreeMap<String, Entries>) {
        custom::publish(by_key.values().flatten().cloned().collect());
    }
}

/// Whether a definition's condition `kind` is `True`.
pub fn condition(crd: &Value, kind: &str) -> bool {
    crd["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == kind && c["status"] == "True")
}

/// The entries one definition serves: none until it is established.
fn entries(crd: &Value) -> Entries {
    if !condition(crd, "Established") {
        return Vec::new();
    }
    let spec = &crd["spec"];
    let names = &crd["status"]["acceptedNames"];
    let strings = |v: &Value| -> Vec<String> { v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect() };
    let short_names = strings(&names["shortNames"]);
    let categories = strings(&names["categories"]);
    let storage_version = spec["versions"].as_array().into_iter().flatten().find(|v| v["storage"] == true).and_then(|v| v["name"].as_str()).unwrap_or_default();
    let conversion = Arc::new(Conversion::of(&spec["conversion"]));
    let only_version = spec["versions"].as_array().is_some_and(|v| v.len() == 1);
    let mut out = Vec::new();
    let mut served: Vec<&Value> = spec["versions"].as_array().into_iter().flatten().filter(|v| v["served"] == true).collect();
    // Discovery lists versions by Kubernetes' priority: the first is the preferred one.
    served.sort_by_key(|v| std::cmp::Reverse(priority(v["name"].as_str().unwrap_or_default())));
    for version in served {
        let schema = match Structural::compile(&version["schema"]["openAPIV3Schema"]) {
            Ok(s) => s,
            Err((at, e)) => {
                tracing::warn!(crd = %crd["metadata"]["name"], at = %at, error = %e, "custom resource version not served: its schema does not compile");
                continue;
            }
        };
        let subresources = &version["subresources"];
        let info = custom::intern(&Names {
            group: spec["group"].as_str().unwrap_or_default(),
            version: version["name"].as_str().unwrap_or_default(),
            plural: names["plural"].as_str().unwrap_or_default(),
            singular: names["singular"].as_str().unwrap_or_default(),
            kind: names["kind"].as_str().unwrap_or_default(),
            namespaced: spec["scope"] == "Namespaced",
            short_names: short_names.iter().map(String::as_str).collect(),
            categories: categories.iter().map(String::as_str).collect(),
            status: subresources.get("status").is_some(),
            scale: subresources.get("scale").is_some(),
        });
        let schema_json = version["schema"]["openAPIV3Schema"].clone();
        let columns = printer_columns(&version["additionalPrinterColumns"]);
        let scale = serde_json::from_value(subresources["scale"].clone()).ok();
        let deprecation = (version["deprecated"] == true).then(|| match version["deprecationWarning"].as_str() {
            Some(w) => w.to_string(),
            None => format!("{}/{} {} is deprecated", info.group, info.version, info.kind),
        });
        let selectable = version["selectableFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["jsonPath"].as_str())
            .map(|p| p.trim_start_matches('.').to_string())
            .collect();
        let version = CustomVersion {
            schema: Arc::new(schema),
            schema_json,
            storage_version: storage_version.to_string(),
            columns,
            scale,
            deprecation,
            selectable,
            terminating: crd["metadata"].get("deletionTimestamp").is_some(),
            conversion: conversion.clone(),
            only_version,
        };
        out.push((info, Arc::new(version)));
    }
    out
}

/// Kubernetes' ordering of version names: GA before beta before alpha, higher numbers first;
/// names of another form after them all.
pub fn priority(name: &str) -> (u8, u32, u32, std::cmp::Reverse<String>) {
    let parse = || -> Option<(u8, u32, u32)> {
        let rest = name.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u32 = rest[..digits].parse().ok()?;
        match &rest[digits..] {
            "" => Some((3, major, 0)),
            tail => {
                let (stage, minor) = tail.strip_prefix("beta").map(|m| (2, m)).or_else(|| tail.strip_prefix("alpha").map(|m| (1, m)))?;
                Some((stage, major, minor.parse().ok()?))
            }
        }
    };
    let (stage, major, minor) = parse().unwrap_or((0, 0, 0));
    (stage, major, minor, std::cmp::Reverse(name.to_string()))
}

/// A version's printer columns; `Age` (from the creation timestamp) when it names none.
fn printer_columns(given: &Value) -> Vec<PrinterColumn> {
    let default = json!([{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": AGE_DESCRIPTION}]);
    let given = match given.as_array() {
        Some(list) if !list.is_empty() => given,
        _ => &default,
    };
    given
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let path_text = c["jsonPath"].as_str()?;
            let path = JsonPath::parse(path_text).ok()?;
            let described = format!("Custom resource definition column (in JSONPath format): {path_text}");
            let column = Column {
                name: custom::intern_str(c["name"].as_str()?),
                type_: custom::intern_str(c["type"].as_str()?),
                format: custom::intern_str(c["format"].as_str().unwrap_or_default()),
                description: custom::intern_str(c["description"].as_str().unwrap_or(&described)),
                priority: c["priority"].as_u64().unwrap_or(0) as u32,
            };
            Some(PrinterColumn { column, path })
        })
        .collect()
}

const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn parse(object: &Object) -> Option<Value> {
    serde_json::from_slice(&object.data).ok()
}

impl ApplyObserver for ServedDefinitions {
    fn prefixes(&self) -> &[&'static str] {
        &[PREFIX]
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let mut by_key = self.by_key.lock().unwrap_or_else(|p| p.into_inner());
        match object.and_then(parse) {
            Some(crd) => by_key.insert(key.to_string(), entries(&crd)),
            None => by_key.remove(key),
        };
        self.publish(&by_key);
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let mut by_key = self.by_key.lock().unwrap_or_else(|p| p.into_inner());
        by_key.clear();
        for (key, object) in objects {
            if let Some(crd) = parse(object) {
                by_key.insert(key.to_string(), entries(&crd));
            }
        }
        self.publish(&by_key);
    }
}

//! What Kubernetes' decoding normalizes in a built-in object: every `resource.Quantity` in
//! canonical form (`0.5` is stored and answered as `500m`, `1.5Gi` as `1536Mi`), and the empty
//! name of a local object reference left out (Go's `omitempty`; the typed schema here requires
//! the field and writes it). The fields are found through the kinds' Protobuf schema, where both
//! are messages of their own; which messages hold one at any depth is worked out once, so
//! objects without any (ConfigMaps, Secrets, ...) are not walked.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use crate::expr::amount::Amount;
use crate::protobuf::schema::{messages, Label, Type};

const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
const LOCAL_REFERENCE: &str = "api.core.v1.LocalObjectReference";

/// The messages rewritten.
fn target(message: &str) -> bool {
    message == QUANTITY || message == LOCAL_REFERENCE
}

/// Whether each message holds a rewritten one somewhere below it: the messages from which one
/// can be reached, found backwards from them.
static HOLDS: LazyLock<HashMap<&'static str, bool>> = LazyLock::new(|| {
    let mut holders: HashMap<&str, Vec<&'static str>> = HashMap::new();
    for (name, m) in messages() {
        for f in m.fields.values() {
            if let Type::Message(inner) = f.ty {
                holders.entry(inner).or_default().push(name);
            }
        }
    }
    let mut holds: HashMap<&'static str, bool> = messages().keys().map(|name| (*name, false)).collect();
    let mut todo = vec![QUANTITY, LOCAL_REFERENCE];
    while let Some(name) = todo.pop() {
        for holder in holders.get(name).into_iter().flatten() {
            if !holds.insert(holder, true).unwrap_or(false) {
                todo.push(holder);
            }
        }
    }
    holds
});

/// Rewrites `obj`, a `message` (the kind's Protobuf message name): each quantity in canonical
/// form (one that does not parse is left for validation to refuse), each empty reference name
/// left out.
pub fn canonicalize(message: &str, obj: &mut Value) {
    if HOLDS.get(message).copied().unwrap_or(false) {
        walk(message, obj);
    }
}

fn walk(message: &str, v: &mut Value) {
    if message == LOCAL_REFERENCE {
        if let Some(map) = v.as_object_mut().filter(|m| m.get("name").is_some_and(|n| n == "")) {
            map.remove("name");
        }
        return;
    }
    if message == QUANTITY {
        if let Some(canonical) = v.as_str().and_then(|s| Amount::parse(s).ok()).map(|a| a.to_string()) {
            *v = Value::String(canonical);
        }
        return;
    }
    let (Some(m), Some(map)) = (messages().get(message), v.as_object_mut()) else { return };
    for f in m.fields.values() {
        let Type::Message(inner) = f.ty else { continue };
        if !target(inner) && !HOLDS.get(inner).copied().unwrap_or(false) {
            continue;
        }
        if f.json == ".." {
            // An embedded struct: its fields are the parent's.
            let mut whole = Value::Object(std::mem::take(map));
            walk(inner, &mut whole);
            if let Value::Object(back) = whole {
                *map = back;
            }
            continue;
        }
        let Some(child) = map.get_mut(f.json) else { continue };
        match f.label {
            Label::Optional => walk(inner, child),
            Label::Repeated => child.as_array_mut().into_iter().flatten().for_each(|i| walk(inner, i)),
            Label::Map => child.as_object_mut().into_iter().flat_map(|o| o.values_mut()).for_each(|i| walk(inner, i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_anywhere_in_a_pod_become_canonical() {
        let mut pod = json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}, "limits": {"cpu": "2000m"}}}],
            "overhead": {"cpu": "1.5"},
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5Gi"}}]
        }});
        canonicalize("api.core.v1.Pod", &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["resources"], json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2"}}));
        assert_eq!(pod["spec"]["overhead"]["cpu"], "1500m");
        assert_eq!(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "1536Mi");
    }

    #[test]
    fn empty_reference_names_are_left_out_embedded_ones_too() {
        let mut pod = json!({"spec": {"imagePullSecrets": [{"name": "reg"}, {"name": ""}], "containers": [{"name": "a", "env": [
            {"name": "E", "valueFrom": {"configMapKeyRef": {"name": "", "key": "k"}}}
        ]}]}});
        canonicalize("api.core.v1.Pod", &mut pod);
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "reg"}, {}]));
        assert_eq!(pod["spec"]["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"], json!({"key": "k"}));
    }

    #[test]
    fn kinds_without_quantities_are_not_walked_and_bad_ones_stay() {
        assert_eq!(HOLDS.get("api.core.v1.ConfigMap"), Some(&false));
        let mut quota = json!({"spec": {"hard": {"pods": "1.5", "cpu": "lots"}}});
        canonicalize("api.core.v1.ResourceQuota", &mut quota);
        assert_eq!(quota["spec"]["hard"], json!({"pods": "1500m", "cpu": "lots"}));
    }
}

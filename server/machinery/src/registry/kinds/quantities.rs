//! Quantities in their canonical form, as Kubernetes' decoding leaves every `resource.Quantity`
//! of a built-in object (`0.5` is stored and answered as `500m`, `1.5Gi` as `1536Mi`). The
//! quantity fields are found through the kinds' Protobuf schema, where a quantity is a message
//! of its own; which messages hold one at any depth is worked out once, so objects without any
//! (ConfigMaps, Secrets, ...) are not walked.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use crate::expr::amount::Amount;
use crate::protobuf::schema::{messages, Label, Type};

const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";

/// Whether each message holds a quantity somewhere below it: the messages from which the
/// quantity can be reached, found backwards from it.
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
    let mut todo = vec![QUANTITY];
    while let Some(name) = todo.pop() {
        for holder in holders.get(name).into_iter().flatten() {
            if !holds.insert(holder, true).unwrap_or(false) {
                todo.push(holder);
            }
        }
    }
    holds
});

/// Rewrites each quantity of `obj`, a `message` (the kind's Protobuf message name), in canonical
/// form; a quantity that does not parse is left for validation to refuse.
pub fn canonicalize(message: &str, obj: &mut Value) {
    if HOLDS.get(message).copied().unwrap_or(false) {
        walk(message, obj);
    }
}

fn walk(message: &str, v: &mut Value) {
    if message == QUANTITY {
        if let Some(canonical) = v.as_str().and_then(|s| Amount::parse(s).ok()).map(|a| a.to_string()) {
            *v = Value::String(canonical);
        }
        return;
    }
    let (Some(m), Some(map)) = (messages().get(message), v.as_object_mut()) else { return };
    for f in m.fields.values() {
        let Type::Message(inner) = f.ty else { continue };
        if inner != QUANTITY && !HOLDS.get(inner).copied().unwrap_or(false) {
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
    fn kinds_without_quantities_are_not_walked_and_bad_ones_stay() {
        assert_eq!(HOLDS.get("api.core.v1.ConfigMap"), Some(&false));
        let mut quota = json!({"spec": {"hard": {"pods": "1.5", "cpu": "lots"}}});
        canonicalize("api.core.v1.ResourceQuota", &mut quota);
        assert_eq!(quota["spec"]["hard"], json!({"pods": "1500m", "cpu": "lots"}));
    }
}

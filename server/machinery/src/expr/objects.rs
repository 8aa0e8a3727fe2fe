//! What mutating admission policies build objects with: the struct literals `Object{...}`,
//! `Object.spec{...}`, `Object.spec.template.spec.containers{...}` (an apply configuration) and
//! `JSONPatch{op, path, value, from}`, each made a plain map, and `jsonpatch.escapeKey`.

use std::collections::{BTreeMap, HashMap};

use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, StructType, Value};

use super::support::{string, value};

/// A struct type whose literals are maps of their fields.
struct MapStruct {
    r#type: Type,
}

impl StructType for MapStruct {
    fn get_type(&self) -> &Type {
        &self.r#type
    }

    fn new_value<'b, 'v>(&self, fields: BTreeMap<String, CowVal<'b, 'v>>) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let mut map = HashMap::new();
        for (name, value) in fields {
            map.insert(name, Value::try_from(&*value)?);
        }
        Box::<dyn Val>::try_from(Value::from(map))
    }
}

/// The struct type names a source constructs that are Kubernetes' (`Object`, `Object.x.y`,
/// `JSONPatch`): a dotted name right before `{`.
pub fn struct_names(source: &str) -> Vec<String> {
    let bytes = source.as_bytes();
    let mut names = Vec::new();
    for (i, _) in source.match_indices('{') {
        let mut start = i;
        while start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b'.') {
            start -= 1;
        }
        let name = &source[start..i];
        let kubernetes = name == "Object" || name.starts_with("Object.") || name == "JSONPatch";
        if kubernetes && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// Kubernetes' environment with the struct types `names`.
pub fn env_with(names: &[String]) -> Result<Env, String> {
    let mut env = super::environment();
    for name in names {
        let r#type = Type::new_struct(name.clone());
        env.add_type(MapStruct { r#type }).map_err(|e| format!("compilation failed: {e:?}"))?;
    }
    Ok(env)
}

/// Declares `jsonpatch.escapeKey(k)`: a map key as one JSON pointer segment.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("jsonpatch.escapeKey", "string_jsonpatch_escape_key", vec![STRING_TYPE], |a| value(escape_key(string(&a, 0)?)))
}

fn escape_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_kubernetes_struct_names() {
        let source = "Object{spec: Object.spec{replicas: 2}, m: {'a': 1}} + [JSONPatch{op: 'add'}] + x.map(y, {})";
        assert_eq!(struct_names(source), vec!["Object", "Object.spec", "JSONPatch"]);
        assert_eq!(escape_key("a/b~c"), "a~1b~0c");
        let e = crate::expr::Expression::parse("jsonpatch.escapeKey('a/b~c')").unwrap();
        assert_eq!(e.eval(&[]), Ok(Value::from("a~1b~0c")));
    }
}

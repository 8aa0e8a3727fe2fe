//! Writes `schema.txt` from the `k8s-pb` crate's generated message structs (field numbers and
//! wire types) and the `k8s-openapi` schemas (JSON names), keeping the messages reachable from
//! the served kinds, their lists and the other kinds of `OTHER_KINDS`. The test fails when the committed file is out of date;
//! `UPDATE_PROTOBUF_SCHEMA=1 cargo test -p machinery protobuf::generate` rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::registry::ALL;

/// A field as `k8s-pb` declares it.
#[derive(Debug)]
struct PbField {
    tag: u32,
    rust_name: String,
    /// `s`, `i32`, ... or `@message`, with `[]` or `{}` in front.
    ty: String,
}

/// The `k8s-pb` source directory, found through `cargo metadata` (for this host only, so that
/// nothing needs downloading).
fn k8s_pb_src() -> PathBuf {
    let rustc = std::process::Command::new("rustc").arg("-vV").output().expect("run rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(String::from));
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform"])
        .arg(host.expect("rustc -vV names the host"))
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let manifest = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "k8s-pb")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("k8s-pb among the packages");
    Path::new(manifest).parent().unwrap().join("src")
}

/// Message name (without `io.k8s.`) of a Rust module path inside `k8s-pb`.
fn package_of(modules: &[String]) -> String {
    let mut parts = modules.to_vec();
    parts[0] = parts[0].replace('_', "-");
    parts.join(".")
}

/// Every message of every `mod.rs` under `dir`.
fn parse_crate(dir: &Path, modules: &mut Vec<String>, out: &mut BTreeMap<String, Vec<PbField>>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            modules.push(path.file_name().unwrap().to_string_lossy().into_owned());
            parse_crate(&path, modules, out);
            modules.pop();
        } else if path.file_name().is_some_and(|n| n == "mod.rs") && !modules.is_empty() {
            parse_module(&std::fs::read_to_string(&path).unwrap(), modules, out);
        }
    }
}

fn parse_module(source: &str, modules: &[String], out: &mut BTreeMap<String, Vec<PbField>>) {
    let code: Vec<&str> = source.lines().map(str::trim).filter(|l| !l.starts_with("//")).collect();
    let code = code.join(" ");
    for chunk in code.split("pub struct ").skip(1) {
        let name = chunk.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap();
        let Some(body) = chunk.split_once('{').map(|(_, b)| b) else { continue };
        let body = &body[..body.find("} ").unwrap_or(body.len())];
        let fields = body.split("#[prost(").skip(1).map(|f| parse_field(f, modules)).collect();
        out.insert(format!("{}.{name}", package_of(modules)), fields);
    }
}

/// One `#[prost(...)] pub name: Type,` declaration (the text after `#[prost(`).
fn parse_field(text: &str, modules: &[String]) -> PbField {
    let (attrs, decl) = text.split_once(")]").unwrap();
    let tag = attrs.split("tag = \"").nth(1).and_then(|t| t.split('"').next()).unwrap().parse().unwrap();
    let decl = decl.trim().strip_prefix("pub ").unwrap();
    let (rust_name, ty) = decl.split_once(':').unwrap();
    let rust_name = rust_name.trim().trim_start_matches("r#").to_string();
    let kind = attrs.split(',').next().unwrap().trim();
    let message_ref = || {
        // The last path inside the type's generics: `super::...::ObjectMeta` or `PodSpec`.
        let path = ty.split(['<', '>', ',', ' ']).rfind(|s| !s.is_empty() && !s.starts_with("::")).unwrap();
        let mut module = modules.to_vec();
        let mut rest = path;
        while let Some(r) = rest.strip_prefix("super::") {
            module.pop();
            rest = r;
        }
        let mut parts: Vec<String> = rest.split("::").map(String::from).collect();
        let message = parts.pop().unwrap();
        module.extend(parts);
        format!("@{}.{message}", package_of(&module))
    };
    let scalar = |k: &str| match k {
        "string" => "s".to_string(),
        "int32" => "i32".into(),
        "int64" => "i64".into(),
        "bool" => "bool".into(),
        "double" => "f64".into(),
        k if k.starts_with("bytes") => "bytes".into(),
        "message" => message_ref(),
        other => panic!("unknown prost kind {other:?}"),
    };
    let ty = if let Some(map) = kind.strip_prefix("btree_map = \"") {
        let value = attrs.split("btree_map = \"").nth(1).unwrap().split('"').next().unwrap();
        assert!(map.starts_with("string"), "map keys are strings");
        format!("{{}}{}", scalar(value.split(", ").nth(1).unwrap()))
    } else if attrs.contains("repeated") {
        format!("[]{}", scalar(kind))
    } else {
        scalar(kind)
    };
    PbField { tag, rust_name, ty }
}

fn alnum_lower(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The JSON property names of every definition, keyed by the definition name with only its
/// letters and digits, lowercased (`k8s-pb` spells `HTTPGetAction` as `HttpGetAction`).
fn json_names() -> BTreeMap<String, Vec<String>> {
    let mut defs = crate::openapi::definitions();
    let mut generator = schemars::generate::SchemaSettings::draft07().into_generator();
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>();
    generator.subschema_for::<k8s_openapi::api::autoscaling::v1::Scale>();
    generator.subschema_for::<k8s_openapi::api::policy::v1::Eviction>();
    generator.subschema_for::<k8s_openapi::api::authentication::v1::TokenRequest>();
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>();
    // Kinds off by default (a gate, a version) are not in the served definitions but may be
    // turned on.
    for r in ALL.iter().filter(|r| !r.is_served()) {
        defs.insert(r.ops.definition.to_string(), (r.ops.schema)(&mut generator).to_value());
    }
    defs.extend(generator.take_definitions(true));
    defs.into_iter()
        .map(|(name, schema)| {
            let props = schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default();
            (alnum_lower(&name), props)
        })
        .collect()
}

/// The JSON name of a field: the schema's property of that name; for a Go struct embedded in its
/// parent (`Probe` holds a `ProbeHandler`), `..`, as the embedded fields are the parent's own; for
/// a field `k8s-openapi` does not know yet, its name in lower camel case.
fn json_name(field: &PbField, props: &[String], all: &BTreeMap<String, Vec<PbField>>) -> String {
    match known(props, &field.rust_name) {
        Some(p) => p.clone(),
        None if embedded(field, props, all) => "..".into(),
        None => lower_camel(&field.rust_name),
    }
}

/// The parent's property named like the field `rust_name`.
fn known<'a>(props: &'a [String], rust_name: &str) -> Option<&'a String> {
    props.iter().find(|p| alnum_lower(p) == alnum_lower(rust_name))
}

/// Whether the struct `field` holds is embedded in its parent: each of its fields is one of the
/// parent's properties or embedded itself (`NamedRuleWithOperations` embeds a
/// `RuleWithOperations`, which embeds a `Rule`).
fn embedded(field: &PbField, props: &[String], all: &BTreeMap<String, Vec<PbField>>) -> bool {
    let child = field.ty.strip_prefix('@').and_then(|c| all.get(c));
    child.is_some_and(|c| !c.is_empty() && c.iter().all(|f| known(props, &f.rust_name).is_some() || embedded(f, props, all)))
}

/// The schema text for the current `k8s-pb` and `k8s-openapi`.
fn generate() -> String {
    let mut all = BTreeMap::new();
    parse_crate(&k8s_pb_src(), &mut Vec::new(), &mut all);
    let names = json_names();
    let mut roots: Vec<String> = ALL.iter().map(|r| super::sent_as(r.ops.definition.trim_start_matches("io.k8s.")).to_string()).collect();
    // The reviews have no lists.
    roots.extend(
        ALL.iter()
            .map(|r| super::sent_as(&format!("{}List", r.ops.definition.trim_start_matches("io.k8s."))).to_string())
            .filter(|l| all.contains_key(l)),
    );
    roots.extend(super::OTHER_KINDS.iter().map(|(_, _, m)| m.to_string()));
    let mut keep = BTreeSet::new();
    while let Some(name) = roots.pop() {
        if !keep.insert(name.clone()) {
            continue;
        }
        let fields = all.get(&name).unwrap_or_else(|| panic!("k8s-pb has no message {name}"));
        roots.extend(fields.iter().filter_map(|f| f.ty.split('@').nth(1)).map(String::from));
    }
    // The properties of a message's schema; an embedded struct has none of its own and shares
    // its parent's.
    let own = |message: &str| names.get(&alnum_lower(&format!("io.k8s.{message}")));
    let props_of = |message: &str| {
        own(message).or_else(|| {
            let reference = format!("@{message}");
            keep.iter().filter(|p| all[*p].iter().any(|f| f.ty == reference)).find_map(|p| own(p))
        })
    };
    // Lists and the metadata-only forms have no schema of their own; their fields' names are
    // plain words (`metadata`, `items`).
    let plain = Vec::new();
    let props_of = |message: &str| {
        props_of(message).or_else(|| (message.ends_with("List") || message.ends_with(".PartialObjectMetadata")).then_some(&plain))
    };
    let mut text = String::from("# Generated by protobuf/generate.rs from the k8s-pb and k8s-openapi crates: do not edit.\n");
    // `ExtraValue` (a list of strings wrapped in a message) is decoded by name, without a schema.
    for name in keep.iter().filter(|n| !n.ends_with(".ExtraValue")) {
        let props = props_of(name).unwrap_or_else(|| panic!("k8s-openapi has no schema for {name}"));
        text.push_str(name);
        for f in &all[name] {
            text.push_str(&format!("\t{}:{}:{}", f.tag, json_name(f, props, &all), f.ty));
        }
        text.push('\n');
    }
    text
}

/// `pod_ip` -> `podIp`, for messages without a JSON schema (their names are plain words).
fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    for (i, word) in snake.split('_').enumerate() {
        let mut chars = word.chars();
        match (i, chars.next()) {
            (0, Some(c)) => out.push(c),
            (_, Some(c)) => out.push(c.to_ascii_uppercase()),
            _ => {}
        }
        out.extend(chars);
    }
    out
}

#[test]
fn schema_txt_is_current() {
    let fresh = generate();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protobuf/schema.txt");
    if std::env::var_os("UPDATE_PROTOBUF_SCHEMA").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    assert!(fresh == super::schema::TEXT, "schema.txt is out of date: run UPDATE_PROTOBUF_SCHEMA=1 cargo test -p machinery protobuf::generate");
}

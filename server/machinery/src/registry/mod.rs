//! The registry: the one table of served resources, and what each kind knows about itself
//! (typed decoding through `k8s-openapi`, defaults, validation, table columns).
//!
//! Routing, discovery, OpenAPI, RBAC and storage keys are all derived from [`served`]: the
//! table's resources less those `--emulated-version` and `--runtime-config` leave out (see
//! [`crate::features`]).

mod table;
pub mod convert;
pub mod custom;
pub mod kinds;

use std::collections::HashMap;
use std::sync::LazyLock;

pub use table::ALL;

use crate::error::{ApiError, Cause};
use serde_json::Value;

/// A column of the `Table` form (`as=Table;g=meta.k8s.io;v=v1`).
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer`, `date`, ...
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0 is shown by default; higher priorities only with `-o wide`.
    pub priority: u32,
}

/// What decoding a request body against the kind's schema found.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The object as the typed schema keeps it (unknown fields dropped).
    pub object: Value,
    /// JSON paths of fields the schema does not know, e.g. `.spec.foo`.
    pub unknown_fields: Vec<String>,
}

/// Per-kind behaviour; one static instance per kind, built from the `k8s-openapi` type.
pub struct KindOps {
    /// Decode through the typed schema: type errors are `Err(message)` (400), unknown fields
    /// are reported, not fatal.
    pub decode: fn(&ResourceInfo, Value) -> Result<Decoded, String>,
    /// Fill server-side defaults (pod restartPolicy, deployment strategy, ...).
    pub default: fn(&ResourceInfo, &mut Value),
    /// Field validation beyond types: required fields, formats. Empty means valid. An update
    /// gives the stored object too (custom resources ratchet: what did not change stays valid).
    pub validate: fn(&ResourceInfo, &Value, Option<&Value>) -> Vec<Cause>,
    /// Everything else the kind does (update rules, table, DELETE answer, initial status,
    /// deprecation): the built-in kind's strategy, [`kinds::Strategy::NONE`] for custom
    /// resources (whose tables come from their definition).
    pub strategy: kinds::Strategy,
    /// JSON schema of the kind, for `/openapi/v2` and `/openapi/v3`.
    pub schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    /// Fully qualified definition name as Kubernetes spells it,
    /// e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub definition: &'static str,
}

/// One served resource. Declared once, in [`ALL`].
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    /// Plural lowercase name used in URLs, e.g. `configmaps`.
    pub resource: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Subresources served beside the main resource: `status`, `scale`.
    pub subresources: &'static [&'static str],
    /// Verbs served on the main resource, as discovery lists them.
    pub verbs: &'static [&'static str],
    /// Whether `metadata.generation` tracks spec changes.
    pub has_generation: bool,
    pub ops: &'static KindOps,
    /// The Kubernetes release that introduced the resource in this version, where it is one
    /// that can be emulated or later (not served when an older release is emulated).
    pub introduced: Option<crate::features::Version>,
    /// Another version its objects are stored in (autoscaling/v1 HorizontalPodAutoscalers are
    /// stored as autoscaling/v2).
    pub stored_as: Option<&'static convert::StoredAs>,
}

/// Every resource this server serves: the built-in table, then the custom resources.
pub fn served() -> impl Iterator<Item = &'static ResourceInfo> {
    let custom: Vec<&'static ResourceInfo> = custom::current().entries.iter().map(|(info, _)| *info).collect();
    built_in().chain(custom)
}

/// Whether this server serves any resource of `group`/`version` itself (built-in or custom),
/// without collecting the custom ones.
pub fn serves(group: &str, version: &str) -> bool {
    let matches = |r: &ResourceInfo| r.group == group && r.version == version;
    built_in().any(matches) || custom::current().entries.iter().any(|(info, _)| matches(info))
}

/// The built-in resources served.
pub fn built_in() -> impl Iterator<Item = &'static ResourceInfo> {
    ALL.iter().zip(served_flags()).filter_map(|(r, on)| on.then_some(r))
}

/// Whether each entry of [`ALL`] is served, decided once from the flags read at start (no
/// request pays for the decision).
fn served_flags() -> &'static [bool] {
    static SERVED: LazyLock<Vec<bool>> = LazyLock::new(|| {
        let features = crate::features::current();
        let emulation = features.emulation;
        // First what the emulated release has; then what it does not, which may follow an
        // older version of the same resource served (`--emulation-forward-compatible`).
        let now: Vec<bool> = ALL.iter().map(|r| r.introduced.is_none_or(|v| v <= emulation) && features.serves(r.group, r.version, r.resource, r.introduced, false)).collect();
        ALL.iter()
            .zip(&now)
            .map(|(r, served)| {
                *served || {
                    let older = ALL.iter().zip(&now).any(|(o, on)| *on && o.group == r.group && o.resource == r.resource && o.version != r.version && !o.version.contains("alpha"));
                    r.introduced.is_some_and(|v| v > emulation) && features.serves(r.group, r.version, r.resource, r.introduced, older)
                }
            })
            .collect()
    });
    &SERVED
}

/// The verbs of a resource that is only ever created and answered, never stored (the reviews).
pub const CREATE_ONLY: &[&str] = &["create"];

/// The verbs of an ordinary read-write resource.
pub const ALL_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

impl ResourceInfo {
    /// Whether this built-in resource is served: its release reached and its version (or
    /// itself) left on by `--runtime-config`.
    pub fn is_served(&self) -> bool {
        ALL.iter().zip(served_flags()).any(|(r, on)| *on && std::ptr::eq(r, self))
    }

    /// The 422 refusing an object of the kind named `name` for `causes`.
    pub fn invalid(&self, name: impl Into<String>, causes: Vec<Cause>) -> ApiError {
        let group = self.ops.strategy.refused_as_group.unwrap_or(self.group);
        ApiError::Invalid { group: group.into(), kind: self.kind.into(), name: name.into(), causes }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The URL path of this resource's group version: `/api/v1` or `/apis/apps/v1`.
    pub fn api_root(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// Storage key prefix of every object of this resource, ending in `/`.
    /// Group-qualified like Kubernetes' etcd layout, e.g. `/registry/apps/deployments/`.
    /// Storage key prefix of the resource's objects: of the group they are stored in (the
    /// core group's for `events.k8s.io` Events, one kind in two groups).
    pub fn key_prefix(&self) -> String {
        let group = self.stored_as.map_or(self.group, |s| s.group());
        if group.is_empty() {
            format!("/registry/{}/", self.resource)
        } else {
            format!("/registry/{group}/{}/", self.resource)
        }
    }

    /// Storage key prefix of the objects in one namespace (or all, when `None`).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}{}/", self.key_prefix(), ns),
            _ => self.key_prefix(),
        }
    }

    /// Storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}{}", self.list_prefix(namespace), name)
    }

    /// Whether objects of this resource are answered and never stored (the review APIs).
    pub fn is_review(&self) -> bool {
        self.verbs == CREATE_ONLY && self.group.ends_with(".k8s.io")
    }

    /// The definition field management and strategic merge walk objects by: the kind's, or a
    /// custom resource's schema root.
    pub fn schema_definition(&self) -> std::borrow::Cow<'static, str> {
        if custom::is_custom(self) {
            std::borrow::Cow::Owned(crate::crd::fields::root(self))
        } else {
            std::borrow::Cow::Borrowed(self.ops.definition)
        }
    }

    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.contains(&sub)
    }
}

/// Finds the resource served at `group`/`version`/`resource`.
pub fn lookup(group: &str, version: &str, resource: &str) -> Option<&'static ResourceInfo> {
    // The served built-in resources by group, version and resource (the first served entry of
    // a name; the flags are read once, so the index is built once).
    type Index = HashMap<(&'static str, &'static str, &'static str), &'static ResourceInfo>;
    static BUILT_IN: LazyLock<Index> = LazyLock::new(|| {
        let mut index = HashMap::new();
        for r in built_in() {
            index.entry((r.group, r.version, r.resource)).or_insert(r);
        }
        index
    });
    let index: &HashMap<(&str, &str, &str), &'static ResourceInfo> = &BUILT_IN;
    let built_in = index.get(&(group, version, resource)).copied();
    let matches = |r: &&'static ResourceInfo| r.group == group && r.version == version && r.resource == resource;
    built_in.or_else(|| custom::current().entries.iter().map(|(info, _)| *info).find(matches))
}

/// Finds a resource by its kind within a group/version.
pub fn lookup_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    served().find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// Finds a resource by group and kind, preferring `version` when it is served.
pub fn lookup_group_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    lookup_kind(group, version, kind).or_else(|| served().find(|r| r.group == group && r.kind == kind))
}

/// What an object's storage key stands for: its resource (the one served at `api_version`
/// when several versions share the key), namespace and name.
pub fn parse_key(key: &str, api_version: &str) -> Option<(&'static ResourceInfo, Option<String>, String)> {
    let candidates: Vec<&'static ResourceInfo> = served().filter(|r| key.starts_with(&r.key_prefix())).collect();
    let longest = candidates.iter().map(|r| r.key_prefix().len()).max()?;
    let mut same: Vec<&'static ResourceInfo> = candidates.into_iter().filter(|r| r.key_prefix().len() == longest).collect();
    same.sort_by_key(|r| r.api_version() != api_version);
    let info = same[0];
    let rest = &key[longest..];
    if info.namespaced {
        let (ns, name) = rest.split_once('/')?;
        Some((info, Some(ns.to_string()), name.to_string()))
    } else {
        Some((info, None, rest.to_string()))
    }
}

impl std::fmt::Debug for ResourceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.resource)
    }
}

//! The RBAC index: every replica's Roles, ClusterRoles and bindings, kept by the apply path and
//! indexed for the question the authorizer asks ("which bindings name this user or one of its
//! groups, at the cluster scope or in this namespace?"), so that a decision costs a few hash
//! lookups whatever the number of objects.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde::Deserialize;

use super::rules::Rule;
use crate::user::{service_account_user, UserInfo};

const CLUSTER_ROLES: &str = "/registry/rbac.authorization.k8s.io/clusterroles/";
const ROLES: &str = "/registry/rbac.authorization.k8s.io/roles/";
const CLUSTER_BINDINGS: &str = "/registry/rbac.authorization.k8s.io/clusterrolebindings/";
const BINDINGS: &str = "/registry/rbac.authorization.k8s.io/rolebindings/";
const PREFIXES: &[&str] = &[CLUSTER_ROLES, ROLES, CLUSTER_BINDINGS, BINDINGS];

/// Called with each binding that applies and its role's rules (or why they are missing);
/// returning true stops the walk.
pub type Visitor<'a> = dyn FnMut(&Binding, Result<&[Rule], String>) -> bool + 'a;

/// Who a binding names, as the index keys it: service accounts become their user names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Subject {
    User(String),
    Group(String),
}

/// The role a binding refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    pub name: String,
}

/// A RoleBinding (namespace set) or ClusterRoleBinding (namespace empty).
#[derive(Debug)]
pub struct Binding {
    pub namespace: String,
    pub name: String,
    pub role_ref: RoleRef,
    subjects: Vec<Subject>,
    /// Each of `subjects` as a decision's reason names it (`User "alice"`, `Group "g"`,
    /// `ServiceAccount "name/namespace"`), in the binding's order.
    described: Vec<String>,
}

impl Binding {
    /// The first of the binding's subjects that `user` is, as a decision's reason names it.
    pub fn subject_for(&self, user: &UserInfo) -> &str {
        let is = |s: &Subject| match s {
            Subject::User(name) => *name == user.name,
            Subject::Group(name) => user.groups.contains(name),
        };
        self.subjects.iter().position(is).map_or("", |i| &self.described[i])
    }
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

#[derive(Deserialize)]
struct RoleObject {
    metadata: Meta,
    #[serde(default)]
    rules: Option<Vec<Rule>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleRefObject {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct SubjectObject {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingObject {
    metadata: Meta,
    role_ref: RoleRefObject,
    #[serde(default)]
    subjects: Option<Vec<SubjectObject>>,
}

type Rules = Arc<Vec<Rule>>;

#[derive(Default)]
struct Inner {
    cluster_roles: HashMap<String, Rules>,
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Rules>>,
    /// Every binding by storage key, to undo its subject entries when it changes.
    bindings: HashMap<String, Arc<Binding>>,
    /// Bindings by (namespace, subject); the namespace is empty for ClusterRoleBindings.
    /// Each set is ordered by storage key, so decisions and reasons are deterministic.
    by_subject: HashMap<(String, Subject), BTreeMap<String, Arc<Binding>>>,
}

/// The index; shared by the authorizer, the escalation checks and the review APIs.
#[derive(Default)]
pub struct RbacIndex {
    inner: RwLock<Inner>,
}

/// Why a binding grants nothing: the role it names does not exist.
pub fn missing_role(role_ref: &RoleRef) -> String {
    format!("{}.rbac.authorization.k8s.io \"{}\" not found", role_ref.kind.to_ascii_lowercase(), role_ref.name)
}

impl RbacIndex {
    pub fn new() -> Arc<RbacIndex> {
        Arc::new(RbacIndex::default())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `visit` with each binding that applies to `user` at the cluster scope, then in
    /// `namespace` (when not empty), and the rules of the role it names (`Err` when that role
    /// does not exist). Stops when `visit` returns true.
    pub fn visit(&self, user: &UserInfo, namespace: &str, visit: &mut Visitor<'_>) {
        let inner = self.read();
        let scopes: &[&str] = if namespace.is_empty() { &[""] } else { &["", namespace] };
        for scope in scopes {
            let subjects = std::iter::once(Subject::User(user.name.clone())).chain(user.groups.iter().cloned().map(Subject::Group));
            for subject in subjects {
                let Some(bindings) = inner.by_subject.get(&(scope.to_string(), subject)) else { continue };
                for b in bindings.values() {
                    let rules = inner.role_rules(&b.role_ref, &b.namespace);
                    let stop = match rules {
                        Some(r) => visit(b, Ok(r.as_slice())),
                        None => visit(b, Err(missing_role(&b.role_ref))),
                    };
                    if stop {
                        return;
                    }
                }
            }
        }
    }

    /// The rules of the role a binding in `namespace` refers to.
    pub fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Option<Rules> {
        self.read().role_rules(role_ref, namespace).cloned()
    }

    /// The rules `user` holds in `namespace` (cluster-wide ones included), and the errors met
    /// (bindings to missing roles).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<Rule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let mut seen = std::collections::HashSet::new();
        self.visit(user, namespace, &mut |b, r| {
            if seen.insert((b.namespace.clone(), b.name.clone())) {
                match r {
                    Ok(r) => rules.extend_from_slice(r),
                    Err(e) => errors.push(e),
                }
            }
            false
        });
        (rules, errors)
    }

    /// Counts of (cluster roles, roles, bindings), for tests and metrics.
    pub fn counts(&self) -> (usize, usize, usize) {
        let inner = self.read();
        (inner.cluster_roles.len(), inner.roles.values().map(HashMap::len).sum(), inner.bindings.len())
    }
}

impl Inner {
    fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Option<&Rules> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            "Role" => self.roles.get(namespace)?.get(&role_ref.name),
            _ => None,
        }
    }

    fn put(&mut self, key: &str, data: &[u8]) {
        if key.starts_with(CLUSTER_ROLES) || key.starts_with(ROLES) {
            let Ok(role) = serde_json::from_slice::<RoleObject>(data) else { return self.remove(key) };
            let rules = Arc::new(role.rules.unwrap_or_default());
            if key.starts_with(CLUSTER_ROLES) {
                self.cluster_roles.insert(role.metadata.name, rules);
            } else {
                self.roles.entry(role.metadata.namespace).or_default().insert(role.metadata.name, rules);
            }
            return;
        }
        self.remove_binding(key);
        let Ok(b) = serde_json::from_slice::<BindingObject>(data) else { return };
        let namespace = if key.starts_with(BINDINGS) { b.metadata.namespace } else { String::new() };
        let (subjects, described) = b
            .subjects
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| match s.kind.as_str() {
                "User" => Some((format!("User {:?}", s.name), Subject::User(s.name))),
                "Group" => Some((format!("Group {:?}", s.name), Subject::Group(s.name))),
                "ServiceAccount" => {
                    // A subject without a namespace means the binding's own.
                    let ns = if s.namespace.is_empty() { namespace.clone() } else { s.namespace };
                    (!ns.is_empty()).then(|| (format!("ServiceAccount {:?}", format!("{}/{ns}", s.name)), Subject::User(service_account_user(&ns, &s.name))))
                }
                _ => None,
            })
            .map(|(d, s)| (s, d))
            .unzip();
        let binding = Arc::new(Binding {
            namespace,
            name: b.metadata.name,
            role_ref: RoleRef { kind: b.role_ref.kind, name: b.role_ref.name },
            subjects,
            described,
        });
        for s in &binding.subjects {
            self.by_subject.entry((binding.namespace.clone(), s.clone())).or_default().insert(key.to_string(), binding.clone());
        }
        self.bindings.insert(key.to_string(), binding);
    }

    fn remove_binding(&mut self, key: &str) {
        let Some(old) = self.bindings.remove(key) else { return };
        for s in &old.subjects {
            let slot = (old.namespace.clone(), s.clone());
            if let Some(set) = self.by_subject.get_mut(&slot) {
                set.remove(key);
                if set.is_empty() {
                    self.by_subject.remove(&slot);
                }
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(name) = key.strip_prefix(CLUSTER_ROLES) {
            self.cluster_roles.remove(name);
        } else if let Some((ns, name)) = key.strip_prefix(ROLES).and_then(|r| r.split_once('/')) {
            if let Some(roles) = self.roles.get_mut(ns) {
                roles.remove(name);
                if roles.is_empty() {
                    self.roles.remove(ns);
                }
            }
        } else {
            self.remove_binding(key);
        }
    }
}

impl ApplyObserver for RbacIndex {
    fn prefixes(&self) -> &[&'static str] {
        PREFIXES
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let mut inner = self.write();
        match object {
            Some(o) => inner.put(key, &o.data),
            None => inner.remove(key),
        }
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let mut fresh = Inner::default();
        for (key, o) in objects {
            fresh.put(key, &o.data);
        }
        *self.write() = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use serde_json::json;

    fn obj(v: serde_json::Value) -> Object {
        Object { rev: 1, data: Bytes::from(serde_json::to_vec(&v).unwrap()) }
    }

    fn names(index: &RbacIndex, user: &UserInfo, ns: &str) -> Vec<String> {
        let mut out = Vec::new();
        index.visit(user, ns, &mut |b, _| {
            out.push(format!("{}/{}", b.namespace, b.name));
            false
        });
        out
    }

    #[test]
    fn bindings_by_subject_follow_changes() {
        let index = RbacIndex::default();
        index.applied(
            &format!("{CLUSTER_ROLES}reader"),
            Some(&obj(json!({"metadata": {"name": "reader"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}))),
        );
        let binding = |subjects: serde_json::Value| {
            obj(json!({"metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "ClusterRole", "name": "reader", "apiGroup": "rbac.authorization.k8s.io"}, "subjects": subjects}))
        };
        let key = format!("{BINDINGS}ns/b");
        index.applied(&key, Some(&binding(json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]))));
        let alice = UserInfo::authenticated("alice", vec![]);
        let sa = UserInfo::authenticated("system:serviceaccount:ns:sa", vec![]);
        assert_eq!(names(&index, &alice, "ns"), vec!["ns/b"]);
        assert_eq!(names(&index, &sa, "ns"), vec!["ns/b"]);
        assert!(names(&index, &alice, "other").is_empty());
        assert!(names(&index, &alice, "").is_empty());
        let (rules, errors) = index.rules_for(&alice, "ns");
        assert_eq!((rules.len(), errors.len()), (1, 0));
        // A changed binding forgets its old subjects.
        index.applied(&key, Some(&binding(json!([{"kind": "Group", "name": "devs"}]))));
        assert!(names(&index, &alice, "ns").is_empty());
        let dev = UserInfo::authenticated("bob", vec!["devs".into()]);
        assert_eq!(names(&index, &dev, "ns"), vec!["ns/b"]);
        // A missing role is reported.
        index.applied(&format!("{CLUSTER_ROLES}reader"), None);
        let (rules, errors) = index.rules_for(&dev, "ns");
        assert!(rules.is_empty());
        assert_eq!(errors, vec!["clusterrole.rbac.authorization.k8s.io \"reader\" not found".to_string()]);
        index.applied(&key, None);
        assert!(names(&index, &dev, "ns").is_empty());
        assert_eq!(index.counts(), (0, 0, 0));
    }
}

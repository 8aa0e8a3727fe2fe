//! The `authorizer` variable of admission policy expressions, as Kubernetes' CEL authz library
//! has it: `authorizer.group(g).resource(r)[.subresource(s)][.namespace(n)][.name(x)].check(verb)`,
//! `authorizer.path(p).check(method)`, `authorizer.serviceAccount(ns, name)` to ask for another
//! identity, and `authorizer.requestResource` for the request's own resource; a decision answers
//! `allowed()`, `reason()`, `errored()` and `error()`.
//!
//! Authorizers are asynchronous and CEL evaluation is not: an expression is evaluated, the checks
//! it asked for and that have no decision yet are collected (answered "not allowed" meanwhile),
//! the caller authorizes them, and the expression is evaluated again until it asks for nothing new.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cel::objects::{Key, Map};
use cel::extractors::This;
use cel::{Context, ExecutionError, Value};

use machinery::expr::Extension;

use access::{Attributes, UserInfo};

/// The marker key of the maps that stand for authorizer values.
const KIND: &str = "@authz";

/// A decision as an expression sees it.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
    pub error: Option<String>,
}

#[derive(Default)]
struct Checks {
    decided: Vec<(Attributes, Decision)>,
    pending: Vec<Attributes>,
}

/// The authorizer of one admission request: who asked, which resource, and the decisions made
/// so far.
#[derive(Clone)]
pub struct Authorizer {
    user: UserInfo,
    checks: Arc<Mutex<Checks>>,
}

/// The request's resource, for `authorizer.requestResource`.
pub struct RequestResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

fn text(m: &Map, key: &str) -> String {
    match m.map.get(&Key::String(Arc::new(key.to_string()))) {
        Some(Value::String(s)) => s.to_string(),
        _ => String::new(),
    }
}

fn node(kind: &str, entries: &[(&str, Value)]) -> Value {
    let mut map: HashMap<String, Value> = entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    map.insert(KIND.into(), Value::String(Arc::new(kind.into())));
    Value::from(map)
}

fn string(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

/// The map behind `this` if it is an authorizer value of `kind`.
fn expect(this: &Value, kind: &str, function: &str) -> Result<Map, ExecutionError> {
    match this {
        Value::Map(m) if text(m, KIND) == kind => Ok(m.clone()),
        _ => Err(ExecutionError::function_error(function, format!("{function}() is not defined on this value"))),
    }
}

/// A copy of `m` with `key` set to `value`.
fn with(m: &Map, key: &str, value: Value) -> Value {
    let mut map: HashMap<String, Value> = m
        .map
        .iter()
        .filter_map(|(k, v)| match k {
            Key::String(s) => Some((s.to_string(), v.clone())),
            _ => None,
        })
        .collect();
    map.insert(key.to_string(), value);
    Value::from(map)
}

impl Authorizer {
    pub fn new(user: UserInfo) -> Authorizer {
        Authorizer { user, checks: Arc::new(Mutex::new(Checks::default())) }
    }

    /// The `authorizer` variable's value (bound like any other variable; the functions that
    /// read it come from [`Authorizer::install`]).
    pub fn value(request: &RequestResource<'_>) -> serde_json::Value {
        serde_json::json!({
            KIND: "authorizer",
            "requestResource": {
                KIND: "resource", "group": request.group, "resource": request.resource,
                "subresource": request.subresource, "namespace": request.namespace, "name": request.name,
            },
        })
    }

    /// The same variable for compiling.
    pub fn sample() -> serde_json::Value {
        Authorizer::value(&RequestResource { group: "", resource: "", subresource: "", namespace: "", name: "" })
    }

    /// The checks asked for that have no decision yet; each is asked for once.
    pub fn take_pending(&self) -> Vec<Attributes> {
        std::mem::take(&mut self.checks.lock().unwrap_or_else(|e| e.into_inner()).pending)
    }

    pub fn record(&self, attrs: Attributes, decision: Decision) {
        self.checks.lock().unwrap_or_else(|e| e.into_inner()).decided.push((attrs, decision));
    }

    fn decide(&self, attrs: Attributes) -> Value {
        let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
        let found = checks.decided.iter().find(|(a, _)| *a == attrs).map(|(_, d)| d.clone());
        let decision = found.unwrap_or_else(|| {
            if !checks.pending.contains(&attrs) {
                checks.pending.push(attrs);
            }
            Decision::default()
        });
        node("decision", &[
            ("allowed", Value::Bool(decision.allowed)),
            ("reason", string(&decision.reason)),
            ("error", string(decision.error.as_deref().unwrap_or_default())),
            ("errored", Value::Bool(decision.error.is_some())),
        ])
    }

    /// The identity a check is made for: the requester, or the service account named.
    fn user_of(&self, m: &Map) -> UserInfo {
        let account = text(m, "serviceAccount");
        match account.split_once('/') {
            Some((ns, name)) => UserInfo::authenticated(
                format!("system:serviceaccount:{ns}:{name}"),
                vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")],
            ),
            None => self.user.clone(),
        }
    }

    /// An authorizer for compiling: its functions, answering no check.
    pub fn for_compiling() -> Authorizer {
        Authorizer::new(UserInfo::default())
    }
}

impl Extension for Authorizer {
    /// Adds the library's functions to `context`.
    fn install(&self, context: &mut Context<'_, '_>) {
        let carry = |from: &Map, kind: &str, entries: &[(&str, Value)]| {
            let mut all = vec![("serviceAccount", string(&text(from, "serviceAccount")))];
            all.extend(entries.iter().cloned());
            node(kind, &all)
        };
        let _ = context.add_function("group", move |This(this): This<Value>, group: Arc<String>| {
            let m = expect(&this, "authorizer", "group")?;
            Ok::<_, ExecutionError>(carry(&m, "group", &[("group", string(&group))]))
        });
        let _ = context.add_function("path", move |This(this): This<Value>, path: Arc<String>| {
            let m = expect(&this, "authorizer", "path")?;
            Ok::<_, ExecutionError>(carry(&m, "path", &[("path", string(&path))]))
        });
        let _ = context.add_function("serviceAccount", |This(this): This<Value>, ns: Arc<String>, name: Arc<String>| {
            let m = expect(&this, "authorizer", "serviceAccount")?;
            Ok::<_, ExecutionError>(with(&m, "serviceAccount", string(&format!("{ns}/{name}"))))
        });
        let _ = context.add_function("resource", move |This(this): This<Value>, resource: Arc<String>| {
            let m = expect(&this, "group", "resource")?;
            Ok::<_, ExecutionError>(carry(&m, "resource", &[("group", string(&text(&m, "group"))), ("resource", string(&resource))]))
        });
        for field in ["subresource", "namespace", "name"] {
            let _ = context.add_function(field, move |This(this): This<Value>, value: Arc<String>| {
                let m = expect(&this, "resource", field)?;
                Ok::<_, ExecutionError>(with(&m, field, string(&value)))
            });
        }
        let me = self.clone();
        let _ = context.add_function("check", move |This(this): This<Value>, verb: Arc<String>| {
            let Value::Map(m) = &this else { return Err(ExecutionError::function_error("check", "check() is not defined on this value")) };
            let attrs = match text(m, KIND).as_str() {
                "resource" => Attributes {
                    user: me.user_of(m),
                    verb: verb.to_string(),
                    resource_request: true,
                    api_group: text(m, "group"),
                    resource: text(m, "resource"),
                    subresource: text(m, "subresource"),
                    namespace: text(m, "namespace"),
                    name: text(m, "name"),
                    ..Default::default()
                },
                "path" => Attributes { user: me.user_of(m), verb: verb.to_string(), path: text(m, "path"), ..Default::default() },
                _ => return Err(ExecutionError::function_error("check", "check() is not defined on this value")),
            };
            Ok(me.decide(attrs))
        });
        for field in ["allowed", "reason", "errored", "error"] {
            let _ = context.add_function(field, move |This(this): This<Value>| {
                let m = expect(&this, "decision", field)?;
                Ok::<_, ExecutionError>(m.map.get(&Key::String(Arc::new(field.to_string()))).cloned().unwrap_or(Value::Null))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use machinery::expr::Expression;

    #[test]
    fn checks_are_collected_then_answered() {
        let request = RequestResource { group: "apps", resource: "deployments", subresource: "", namespace: "ns", name: "web" };
        let value = Authorizer::value(&request);
        let vars = [("authorizer", &value)];
        let source = "authorizer.requestResource.check('update').allowed() && authorizer.path('/metrics').check('get').errored() == false";
        let compiling = Authorizer::for_compiling();
        let e = Expression::compile_with(source, &vars, Some("bool"), Some(&compiling)).unwrap();
        let authz = Authorizer::new(UserInfo::authenticated("alice", vec![]));
        // Nothing decided yet: both checks are asked for, the first answer is "not allowed".
        assert_eq!(e.eval_bool(&vars, Some(&authz)), Ok(false));
        let pending = authz.take_pending();
        assert_eq!(pending.len(), 1, "&& stops at the first false: {pending:?}");
        let asked = &pending[0];
        assert_eq!((asked.verb.as_str(), asked.api_group.as_str(), asked.resource.as_str(), asked.namespace.as_str(), asked.name.as_str()), ("update", "apps", "deployments", "ns", "web"));
        assert_eq!(asked.user.name, "alice");
        authz.record(pending[0].clone(), Decision { allowed: true, ..Default::default() });
        // The second check now runs; its answer is a placeholder until decided.
        let _ = e.eval_bool(&vars, Some(&authz));
        let pending = authz.take_pending();
        assert_eq!((pending[0].path.as_str(), pending[0].resource_request), ("/metrics", false));
        authz.record(pending[0].clone(), Decision { allowed: false, reason: String::new(), error: Some("webhook down".into()) });
        assert_eq!(e.eval_bool(&vars, Some(&authz)), Ok(false));
        assert!(authz.take_pending().is_empty());

        // Another identity, and functions on the wrong kind of value.
        let sa = Expression::compile_with("authorizer.serviceAccount('ns', 'bot').group('').resource('pods').check('list').allowed()", &vars, None, Some(&compiling)).unwrap();
        let _ = sa.eval_with(&vars, Some(&authz));
        let asked = authz.take_pending();
        assert_eq!(asked[0].user.name, "system:serviceaccount:ns:bot");
        assert!(asked[0].user.groups.contains(&"system:serviceaccounts:ns".to_string()));
        let wrong = Expression::compile_with("authorizer.resource('pods')", &vars, None, Some(&compiling)).unwrap();
        assert!(wrong.eval_with(&vars, Some(&authz)).is_err());
    }
}

//! Classification: every request is matched to the FlowSchema of lowest matching precedence
//! (then name) whose rules select its user and what it does, and to that schema's priority
//! level. The schemas and levels are kept by the apply path on every replica.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

use super::dispatch::{Dispatcher, LevelConfig, Queuing};
use super::inflight::MaxInFlight;
use super::rules::{self, Rule};
use access::attributes::Attributes;

const SCHEMAS: &str = "/registry/flowcontrol.apiserver.k8s.io/flowschemas/";
const LEVELS: &str = "/registry/flowcontrol.apiserver.k8s.io/prioritylevelconfigurations/";
const PREFIXES: &[&str] = &[SCHEMAS, LEVELS];

/// A request's flow schema and priority level, by name and UID (shared with the compiled
/// schema: classifying a request copies no strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub flow_schema: Arc<str>,
    pub priority_level: Arc<str>,
    /// The schema's and the level's UIDs, as the response headers that name them carry them.
    pub uid_headers: [http::HeaderValue; 2],
    /// The flow within the schema: the user's name or the namespace, as the schema's
    /// `distinguisherMethod` says; empty without one.
    pub distinguisher: String,
    pub level: LevelConfig,
}

#[derive(Default)]
struct State {
    /// By key, the stored objects.
    schemas: HashMap<String, Value>,
    levels: HashMap<String, Value>,
    /// The schemas whose level exists, read for matching, in matching order.
    order: Vec<Compiled>,
    /// Each level's limits, by name.
    configs: HashMap<String, LevelConfig>,
    /// The seats all levels share.
    server_limit: u64,
}

/// Nominal concurrency shares of a level (Exempt levels count too, as Kubernetes sums them).
fn shares(level: &Value) -> u64 {
    let spec = &level["spec"];
    match spec["type"].as_str() {
        Some("Exempt") => spec["exempt"]["nominalConcurrencyShares"].as_u64().unwrap_or(0),
        _ => spec["limited"]["nominalConcurrencyShares"].as_u64().unwrap_or(30),
    }
}

/// A level's limits: its share of the server's seats, rounded up, and how it queues (with
/// Kubernetes' defaults: 64 queues, hands of 8, 50 requests a queue).
fn level_config(level: &Value, total_shares: u64, server_limit: u64) -> LevelConfig {
    let spec = &level["spec"];
    let exempt = spec["type"] == "Exempt";
    let limit = if total_shares == 0 { 0 } else { (server_limit * shares(level)).div_ceil(total_shares) as usize };
    let response = &spec["limited"]["limitResponse"];
    let queuing = (response["type"] != "Reject").then(|| {
        let q = &response["queuing"];
        let get = |k: &str, default: u64| q[k].as_u64().unwrap_or(default) as usize;
        Queuing { queues: get("queues", 64).max(1), hand_size: get("handSize", 8).max(1), queue_length_limit: get("queueLengthLimit", 50) }
    });
    LevelConfig { exempt, limit, queuing }
}

impl State {
    fn reorder(&mut self) {
        let total: u64 = self.levels.values().map(shares).sum();
        self.configs = self.levels.values().map(|l| (name(l).to_string(), level_config(l, total, self.server_limit))).collect();
        let mut order: Vec<(i64, String, &Value)> =
            self.schemas.values().map(|v| (v["spec"]["matchingPrecedence"].as_i64().unwrap_or(1000), name(v).to_string(), v)).collect();
        order.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        self.order = order.into_iter().filter_map(|(_, _, schema)| self.compile(schema)).collect();
    }

    /// A schema ready for matching; none while its level does not exist.
    fn compile(&self, schema: &Value) -> Option<Compiled> {
        let level_name = schema["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default();
        let level = self.levels.get(&format!("{LEVELS}{level_name}"))?;
        Some(Compiled {
            rules: Rule::of_schema(schema),
            distinguisher: schema["spec"]["distinguisherMethod"]["type"].as_str().unwrap_or_default().to_string(),
            classification: Classification {
                flow_schema: name(schema).into(),
                priority_level: level_name.into(),
                uid_headers: [&schema["metadata"]["uid"], &level["metadata"]["uid"]]
                    .map(|uid| http::HeaderValue::from_str(uid.as_str().unwrap_or_default()).unwrap_or(http::HeaderValue::from_static(""))),
                distinguisher: String::new(),
                level: *self.configs.get(level_name)?,
            },
        })
    }
}

/// A schema as matching needs it.
struct Compiled {
    rules: Vec<Rule>,
    /// `ByUser`, `ByNamespace` or empty.
    distinguisher: String,
    /// What a matching request gets (its distinguisher filled in).
    classification: Classification,
}

fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

/// The FlowSchemas and PriorityLevelConfigurations this replica has applied, and the queues
/// of its priority levels.
pub struct FlowControl {
    /// Off (`--enable-priority-and-fairness=false`): requests are not classified, and the
    /// max-in-flight limits apply.
    pub enabled: bool,
    state: RwLock<State>,
    pub dispatcher: Arc<Dispatcher>,
    pub inflight: Option<MaxInFlight>,
}

impl Default for FlowControl {
    fn default() -> Self {
        FlowControl::new(true, 400, 200)
    }
}

impl FlowControl {
    /// APF on or off, with kube-apiserver's `--max-requests-inflight` and
    /// `--max-mutating-requests-inflight`: with APF their sum is the seats the levels share.
    pub fn new(enabled: bool, max_requests_inflight: usize, max_mutating_requests_inflight: usize) -> FlowControl {
        let server_limit = (max_requests_inflight + max_mutating_requests_inflight) as u64;
        FlowControl {
            enabled,
            state: RwLock::new(State { server_limit, ..Default::default() }),
            dispatcher: Arc::default(),
            inflight: (!enabled).then(|| MaxInFlight::new(max_requests_inflight, max_mutating_requests_inflight)),
        }
    }

    /// The schema and level a request falls in; none with APF off or before the mandatory
    /// objects exist.
    pub fn classify(&self, a: &Attributes) -> Option<Classification> {
        if !self.enabled {
            return None;
        }
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let request = rules::Request { attrs: a, resource: a.combined_resource() };
        let schema = state.order.iter().find(|s| s.rules.iter().any(|r| r.matches(&request)))?;
        let distinguisher = match schema.distinguisher.as_str() {
            "ByUser" => a.user.name.clone(),
            "ByNamespace" => a.namespace.clone(),
            _ => String::new(),
        };
        Some(Classification { distinguisher, ..schema.classification.clone() })
    }

    /// The concurrency each priority level is entitled to out of the server's seats: its
    /// nominal shares over the sum of all levels' shares, rounded up.
    pub fn nominal_limits(&self) -> Vec<(String, u64)> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(String, u64)> = state.configs.iter().map(|(name, c)| (name.clone(), c.limit as u64)).collect();
        out.sort();
        out
    }
}

impl ApplyObserver for FlowControl {
    fn prefixes(&self) -> &[&'static str] {
        PREFIXES
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        let parsed = object.and_then(|o| serde_json::from_slice::<Value>(&o.data).ok());
        let map = if key.starts_with(SCHEMAS) { &mut state.schemas } else { &mut state.levels };
        match parsed {
            Some(v) => map.insert(key.to_string(), v),
            None => map.remove(key),
        };
        state.reorder();
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let server_limit = self.state.read().unwrap_or_else(|e| e.into_inner()).server_limit;
        let mut state = State { server_limit, ..Default::default() };
        for (key, object) in objects {
            let Ok(v) = serde_json::from_slice::<Value>(&object.data) else { continue };
            if key.starts_with(SCHEMAS) {
                state.schemas.insert(key.to_string(), v);
            } else if key.starts_with(LEVELS) {
                state.levels.insert(key.to_string(), v);
            }
        }
        state.reorder();
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = state;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use access::user::UserInfo;
    use serde_json::json;

    fn object(v: Value) -> Object {
        Object { rev: 1, data: serde_json::to_vec(&v).unwrap().into() }
    }

    #[test]
    fn the_lowest_precedence_match_decides() {
        let fc = FlowControl::default();
        let objects: Vec<(String, Object)> = crate::flowcontrol::bootstrap::objects()
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o["metadata"]["uid"] = json!(format!("uid-{}", name(&o)));
                let prefix = if o["kind"] == "FlowSchema" { SCHEMAS } else { LEVELS };
                (format!("{prefix}{}", name(&o)), object(o))
            })
            .collect();
        fc.reset(&mut objects.iter().map(|(k, o)| (k.as_str(), o)));
        let attrs = |user: UserInfo, path: &str| Attributes { user, verb: "get".into(), path: path.into(), ..Default::default() };
        let admin = UserInfo::authenticated("admin", vec!["system:masters".into()]);
        assert_eq!(fc.classify(&attrs(admin, "/version")).unwrap().flow_schema, "exempt".into());
        let alice = UserInfo::authenticated("alice", vec![]);
        assert_eq!(fc.classify(&attrs(alice.clone(), "/healthz")).unwrap().flow_schema, "probes".into());
        let c = fc.classify(&attrs(alice, "/version")).unwrap();
        assert_eq!((&*c.flow_schema, &*c.priority_level, c.uid_headers[1].to_str().unwrap()), ("global-default", "global-default", "uid-global-default"));
        // A schema of lower precedence for one user wins for that user only.
        let custom = json!({"metadata": {"name": "noxu", "uid": "u1"}, "spec": {"matchingPrecedence": 1000, "priorityLevelConfiguration": {"name": "workload-low"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
        fc.applied(&format!("{SCHEMAS}noxu"), Some(&object(custom)));
        let noxu = UserInfo::authenticated("noxu", vec![]);
        assert_eq!(fc.classify(&attrs(noxu, "/version")).unwrap().uid_headers[0], "u1");
        let limits = fc.nominal_limits();
        assert!(limits.contains(&("catch-all".to_string(), 13)), "{limits:?}");
    }
}

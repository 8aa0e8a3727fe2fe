//! Priority: a new pod gets the priority and preemption policy of its PriorityClass, or of
//! the cluster's default class (the one with `globalDefault`, the lowest if several), or 0
//! and `PreemptLowerPriority` when there is none; a pod naming a missing class, or a priority
//! of its own that differs, is refused. An update keeps the stored values. Only one
//! PriorityClass may be the global default.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::kept::Kept;
use crate::{Mutating, Operation, Request, Validating};
use machinery::error::ApiResult;

/// The priority of pods when no class is the default.
const PRIORITY_WITHOUT_DEFAULT: i64 = 0;
const PREEMPT_LOWER: &str = "PreemptLowerPriority";

pub struct Priority {
    pub classes: Arc<Kept>,
}

impl Priority {
    /// The default class: marked `globalDefault`, the lowest value when several are.
    fn default_class(&self) -> Option<Arc<Value>> {
        self.classes.all().into_iter().filter(|c| c["globalDefault"] == true).min_by_key(|c| c["value"].as_i64().unwrap_or_default())
    }
}

#[async_trait::async_trait]
impl Mutating for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !r.concerns("", "pods") {
            return Ok(());
        }
        let spec = &mut pod["spec"];
        match (r.operation, r.old) {
            (Operation::Update, Some(old)) => {
                for field in ["priority", "preemptionPolicy"] {
                    if spec[field].is_null() && !old["spec"][field].is_null() {
                        spec[field] = old["spec"][field].clone();
                    }
                }
                Ok(())
            }
            (Operation::Create, _) => {
                let named = spec["priorityClassName"].as_str().filter(|n| !n.is_empty()).map(str::to_string);
                let class = match &named {
                    Some(name) => Some(self.classes.get(name).ok_or_else(|| r.forbidden(format!("no PriorityClass with name {name} was found")))?),
                    None => self.default_class(),
                };
                let (class_name, priority, policy) = match &class {
                    Some(c) => (c["metadata"]["name"].as_str().unwrap_or_default(), c["value"].as_i64().unwrap_or_default(), c["preemptionPolicy"].as_str()),
                    None => ("", PRIORITY_WITHOUT_DEFAULT, Some(PREEMPT_LOWER)),
                };
                if !class_name.is_empty() {
                    spec["priorityClassName"] = json!(class_name);
                }
                if let Some(given) = spec["priority"].as_i64().filter(|p| *p != priority) {
                    return Err(r.forbidden(format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name")));
                }
                spec["priority"] = json!(priority);
                if let Some(policy) = policy {
                    if let Some(given) = spec["preemptionPolicy"].as_str().filter(|p| *p != policy) {
                        return Err(r.forbidden(format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name")));
                    }
                    spec["preemptionPolicy"] = json!(policy);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl Validating for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(class) = r.object.filter(|_| r.concerns("scheduling.k8s.io", "priorityclasses")) else { return Ok(()) };
        if class["globalDefault"] != true || !matches!(r.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        match self.default_class() {
            Some(current) if r.operation == Operation::Create || current["metadata"]["name"] != class["metadata"]["name"] => {
                let name = current["metadata"]["name"].as_str().unwrap_or_default();
                Err(r.forbidden(format!("PriorityClass {name} is already marked as default. Only one default can exist")))
            }
            _ => Ok(()),
        }
    }
}

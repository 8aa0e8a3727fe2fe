//! Namespace writes: Pod Security labels that name no level or version are refused (on update,
//! only when they changed), an exempt namespace's labels draw a warning that they are ignored,
//! and a stricter enforce level is answered with warnings naming the existing pods it would
//! refuse (at most 3000 of them looked at, for at most a second, one pod per controller first).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use machinery::error::ApiResult;
use machinery::expr::quote;

use super::checks::Pod;
use super::evaluation::evaluate;
use super::labels;
use super::levels::{Level, LevelVersion, Policy};
use super::plugin::PodSecurity;
use crate::{Operation, Request};

const MAX_PODS_CHECKED: usize = 3000;
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

impl PodSecurity {
    pub(super) fn namespace(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(namespace) = r.object.filter(|_| r.req.subresource.is_none()) else { return Ok(()) };
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        let labels = namespace["metadata"]["labels"].as_object();
        let (policy, problems) = self.policy(labels);
        let old = match (r.operation, r.old) {
            (Operation::Update, Some(old)) => Some(self.policy(old["metadata"]["labels"].as_object())),
            _ => None,
        };
        // New problems are refused; ones the namespace already had are kept.
        if !problems.is_empty() && old.as_ref().is_none_or(|(_, old_problems)| old_problems.is_empty() || *old_problems != problems) {
            return Err(r.req.info.invalid(name, problems));
        }
        if let Some((old, _)) = &old {
            let (new, old) = (policy.enforce, old.enforce);
            if new == old || new.level == Level::Privileged || (new.version == old.version && new.level <= old.level) {
                return Ok(());
            }
        }
        if self.exempt_namespace(name) {
            if let Some(warning) = self.exempt_warning(name, &policy, labels) {
                r.warn(warning);
            }
            return Ok(());
        }
        if old.is_some() {
            for warning in self.existing_pods(name, policy.enforce) {
                r.warn(warning);
            }
        }
        Ok(())
    }

    /// The warning that an exempt namespace's policy is ignored: the modes its labels set to
    /// something other than privileged, when the policy differs from the defaults.
    fn exempt_warning(&self, name: &str, policy: &Policy, labels: Option<&Map<String, Value>>) -> Option<String> {
        if policy.fully_privileged() || policy.equivalent(&self.config.defaults) {
            return None;
        }
        let modes = [("enforce", labels::ENFORCE, policy.enforce), ("audit", labels::AUDIT, policy.audit), ("warn", labels::WARN, policy.warn)];
        let set: Vec<String> = modes.into_iter().filter(|(_, label, lv)| lv.level != Level::Privileged && labels::sets_mode(labels, label)).map(|(mode, _, lv)| format!("{mode}={lv}")).collect();
        Some(format!("namespace {} is exempt from Pod Security, and the policy ({}) will be ignored", quote(name), set.join(", ")))
    }

    /// Warnings for the namespace's pods that `enforce` would refuse: pods with the same
    /// reasons together, under the first name.
    fn existing_pods(&self, namespace: &str, enforce: LevelVersion) -> Vec<String> {
        let deadline = Instant::now() + CHECK_TIMEOUT;
        let Ok(listed) = self.store.cache().list(&self.pods.list_prefix(Some(namespace)), None, None, None, &|_| true) else {
            return vec!["failed to list pods while checking new PodSecurity enforce level".to_string()];
        };
        let pods: Vec<Value> = listed.items.iter().filter_map(|o| serde_json::from_slice(&o.data).ok()).collect();
        let mut prioritized = self.prioritize(&pods);
        let total = prioritized.len();
        prioritized.truncate(MAX_PODS_CHECKED);
        let mut checked = prioritized.len();
        // Each distinct set of reasons, in the order met, with its first pod name and count.
        let mut reasons: Vec<String> = Vec::new();
        let mut pods_by_reasons: HashMap<String, (&str, usize)> = HashMap::new();
        for (i, pod) in prioritized.iter().enumerate() {
            let verdict = evaluate(enforce, &Pod { metadata: &pod["metadata"], spec: &pod["spec"] });
            if !verdict.allowed() {
                let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                let reason = verdict.reasons();
                let entry = pods_by_reasons.entry(reason.clone()).or_insert_with(|| {
                    reasons.push(reason);
                    (name, 0)
                });
                entry.0 = entry.0.min(name);
                entry.1 += 1;
            }
            if Instant::now() >= deadline {
                checked = i + 1;
                break;
            }
        }
        let mut warnings = Vec::new();
        if checked < total {
            warnings.push(format!("new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"));
        }
        if !reasons.is_empty() {
            warnings.push(format!("existing pods in namespace {} violate the new PodSecurity enforce level {}", quote(namespace), quote(enforce.to_string())));
        }
        let mut per_pod: Vec<String> = reasons
            .into_iter()
            .map(|reason| {
                let (name, count) = pods_by_reasons[&reason];
                match count {
                    1 => format!("{name}: {reason}"),
                    2 => format!("{name} (and 1 other pod): {reason}"),
                    _ => format!("{name} (and {} other pods): {reason}", count - 1),
                }
            })
            .collect();
        per_pod.sort();
        warnings.extend(per_pod);
        warnings
    }

    /// The pods to evaluate, runtime-class exemptions left out: one pod per controller first,
    /// then the other pods of the same controllers.
    fn prioritize<'a>(&self, pods: &'a [Value]) -> Vec<&'a Value> {
        let mut controllers = HashSet::new();
        let (mut first, mut again) = (Vec::new(), Vec::new());
        for pod in pods.iter().filter(|p| !self.exempt_runtime_class(&p["spec"])) {
            let controller = pod["metadata"]["ownerReferences"].as_array().into_iter().flatten().find(|o| o["controller"] == true);
            match controller {
                Some(c) if !controllers.insert(c["uid"].as_str().unwrap_or_default()) => again.push(pod),
                _ => first.push(pod),
            }
        }
        first.extend(again);
        first
    }
}

//! What a pod requests or is limited to as a whole, as Kubernetes sums it: its containers added
//! up, each init container's need (sidecars, which keep running, added to those after them)
//! taken where it is larger, pod-level CPU and memory in place of the containers' sum when the
//! pod sets them, and, for quota, the runtime's overhead. LimitRanger's `Pod` limits and quota
//! usage both read a pod through this.

use serde_json::Value;

use crate::resource_list::{add_into, max_into, read, ResourceList};

/// Which side of the containers' resources.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Requests,
    Limits,
}

impl Side {
    fn key(self) -> &'static str {
        match self {
            Side::Requests => "requests",
            Side::Limits => "limits",
        }
    }
}

/// The resources pod-level `resources` may set.
const POD_LEVEL: &[&str] = &["cpu", "memory"];

/// The pod's total on `side`; with `overhead`, the runtime overhead is added (to every request,
/// and to the limits the pod has).
pub fn total(pod: &Value, side: Side, overhead: bool) -> ResourceList {
    let spec = &pod["spec"];
    let own = |c: &Value| read(&c["resources"][side.key()]);
    let mut sum = ResourceList::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        add_into(&mut sum, &own(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init = ResourceList::new();
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        let need = if c["restartPolicy"] == "Always" {
            add_into(&mut sum, &own(c));
            add_into(&mut sidecars, &own(c));
            sidecars.clone()
        } else {
            let mut need = own(c);
            add_into(&mut need, &sidecars);
            need
        };
        max_into(&mut init, &need);
    }
    max_into(&mut sum, &init);
    if machinery::features::enabled("PodLevelResources") {
        for (name, amount) in read(&spec["resources"][side.key()]) {
            if POD_LEVEL.contains(&name.as_str()) {
                sum.insert(name, amount);
            }
        }
    }
    if overhead {
        for (name, amount) in read(&spec["overhead"]) {
            match (side, sum.get(&name)) {
                (_, Some(mine)) => {
                    let more = mine.plus(&amount);
                    sum.insert(name, more);
                }
                (Side::Requests, None) => {
                    sum.insert(name, amount);
                }
                (Side::Limits, None) => {}
            }
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource_list::pretty;
    use serde_json::json;

    #[test]
    fn sums_containers_and_takes_the_larger_init_need() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [
                {"name": "i", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}},
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
            ],
            "overhead": {"cpu": "10m", "memory": "1Mi"},
        }});
        assert_eq!(pretty(&total(&pod, Side::Requests, false)), "cpu=1,memory=64Mi");
        assert_eq!(pretty(&total(&pod, Side::Requests, true)), "cpu=1010m,memory=65Mi");
        assert_eq!(pretty(&total(&pod, Side::Limits, true)), "cpu=1010m");
    }
}

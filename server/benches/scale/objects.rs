//! The objects a simulated cluster is made of, shaped as real ones: a Node as a kubelet
//! registers it (capacity, allocatable, conditions, addresses, images, about 4 KiB), its Lease,
//! a Pod as a ReplicaSet controller creates it (referring to a ConfigMap and a Secret of its
//! namespace), and the status a kubelet reports once it runs.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn now_seconds() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The node's conditions as its status reports them, heartbeats at `at`.
pub fn conditions(at: &str) -> Value {
    let c = |t: &str, s: &str, reason: &str, message: &str| {
        json!({"type": t, "status": s, "lastHeartbeatTime": at, "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": reason, "message": message})
    };
    json!([
        c("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        c("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        c("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        c("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ])
}

/// Node `index` named `name`, as its kubelet registers it.
pub fn node(name: &str, index: usize) -> Node {
    let images: Vec<Value> = (0..10)
        .map(|i| {
            json!({"names": [format!("registry.example/team-{i}/service@sha256:{:064x}", i * 7919 + 1), format!("registry.example/team-{i}/service:v1.{i}.0")], "sizeBytes": 50_000_000 + i * 1_000_003})
        })
        .collect();
    let resources = json!({"cpu": "8", "ephemeral-storage": "102626232Ki", "hugepages-2Mi": "0", "memory": "32862820Ki", "pods": "110"});
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m5.2xlarge",
                "topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": format!("zone-{}", index % 3)
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
        },
        "spec": {"podCIDR": format!("10.{}.{}.0/24", 64 + index / 256, index % 256), "podCIDRs": [format!("10.{}.{}.0/24", 64 + index / 256, index % 256)]},
        "status": {
            "capacity": resources, "allocatable": resources,
            "conditions": conditions(&now_seconds()),
            "addresses": [{"type": "InternalIP", "address": ip(index)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{:032x}", index), "systemUUID": format!("ec2{:029x}", index), "bootID": format!("{:032x}", index * 31),
                "kernelVersion": "6.1.0-28-cloud-amd64", "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.36.2", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"
            },
            "images": images
        }
    }))
    .expect("a valid Node")
}

/// Node `index`'s address.
pub fn ip(index: usize) -> String {
    format!("10.0.{}.{}", index / 250, index % 250 + 2)
}

/// The Lease node `name` renews, held until `renew`.
pub fn lease(name: &str, renew: &str) -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew}
    }))
    .expect("a valid Lease")
}

/// Pod `name` of namespace `ns`, unscheduled, using the namespace's ConfigMap and Secret.
pub fn pod(name: &str, ns: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "scale", "name": name}},
        "spec": {
            "terminationGracePeriodSeconds": 30,
            "containers": [{
                "name": "app", "image": "registry.example/team-0/service:v1.0.0",
                "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}},
                "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "credentials"}}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}]
            }]
        }
    }))
    .expect("a valid Pod")
}

/// The status a kubelet reports for a pod it started on the node at `host_ip`, container
/// `container` of the node's.
pub fn running(host_ip: &str, pod_ip: &str, container: u64) -> Value {
    let at = now_seconds();
    let c = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": at, "lastProbeTime": null});
    json!({"status": {
        "phase": "Running", "hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": at,
        "conditions": [c("PodReadyToStartContainers"), c("Initialized"), c("Ready"), c("ContainersReady"), c("PodScheduled")],
        "containerStatuses": [{
            "name": "app", "ready": true, "started": true, "restartCount": 0, "image": "registry.example/team-0/service:v1.0.0",
            "imageID": "registry.example/team-0/service@sha256:0000000000000000000000000000000000000000000000000000000000000001",
            "containerID": format!("containerd://{container:064x}"), "state": {"running": {"startedAt": at}}
        }],
        "qosClass": "Burstable"
    }})
}

/// The status a kubelet reports once a deleted pod's container stopped.
pub fn stopped() -> Value {
    let at = now_seconds();
    json!({"status": {
        "phase": "Succeeded",
        "containerStatuses": [{
            "name": "app", "ready": false, "started": false, "restartCount": 0, "image": "registry.example/team-0/service:v1.0.0",
            "imageID": "registry.example/team-0/service@sha256:0000000000000000000000000000000000000000000000000000000000000001",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at}}
        }]
    }})
}

/// Node `name`'s heartbeat: its conditions at `at`.
pub fn heartbeat(at: &str) -> Value {
    json!({"status": {"conditions": conditions(at)}})
}

/// A Node's size as JSON, for the report.
pub fn json_size<T: serde::Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(0)
}

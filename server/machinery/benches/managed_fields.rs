//! What recording an update in `managedFields` costs, per update, on the objects writes meet:
//! a 1 KiB ConfigMap with one manager, and a running Pod (two containers with ports, env and
//! mounts; conditions and container statuses) whose fields three managers share: the client
//! that created it, the scheduler and the kubelet. Run with
//! `cargo bench -p machinery --bench managed_fields`.

use std::hint::black_box;
use std::time::Instant;

use machinery::fieldmanager::{apply, update, Manager};
use serde_json::{json, Value};

const ROUNDS: usize = 5;
const UPDATES: usize = 20_000;

fn manager(name: &str, api_version: &str, subresource: Option<&str>) -> Manager {
    Manager { name: name.into(), api_version: api_version.into(), subresource: subresource.map(str::to_string) }
}

fn container(name: &str, port: u16) -> Value {
    json!({
        "name": name, "image": format!("registry.example/{name}:1.0"), "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": port, "protocol": "TCP", "name": "http"}, {"containerPort": port + 1, "protocol": "TCP", "name": "metrics"}],
        "env": [{"name": "MODE", "value": "serve"}, {"name": "LEVEL", "value": "info"}, {"name": "REGION", "value": "west"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "token", "mountPath": "/var/run/secrets/token", "readOnly": true}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
    })
}

fn pod_status(ready: &str) -> Value {
    let condition = |t: &str, s: &str| json!({"type": t, "status": s, "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:00Z"});
    let status = |name: &str| json!({"name": name, "ready": ready == "True", "restartCount": 0, "image": format!("registry.example/{name}:1.0"),
        "imageID": format!("registry.example/{name}@sha256:0123"), "containerID": format!("containerd://{name}"), "started": true,
        "state": {"running": {"startedAt": "2026-11-30T10:00:01Z"}}});
    json!({
        "phase": "Running", "hostIP": "10.0.0.7", "podIP": "10.244.3.17", "podIPs": [{"ip": "10.244.3.17"}], "startTime": "2026-11-30T10:00:00Z", "qosClass": "Burstable",
        "conditions": [condition("Initialized", "True"), condition("Ready", ready), condition("ContainersReady", ready), condition("PodScheduled", "True")],
        "containerStatuses": [status("app"), status("sidecar")]
    })
}

/// The Pod with its three managers' entries, built by the same calls the server makes.
fn pod() -> Value {
    let def = "io.k8s.api.core.v1.Pod";
    let created = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9c-x2x9k", "namespace": "default", "labels": {"app": "web", "pod-template-hash": "7d4b9c"}},
        "spec": {"containers": [container("app", 8080), container("sidecar", 9090)],
                 "volumes": [{"name": "config", "configMap": {"name": "web"}}, {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "schedulerName": "default-scheduler"}
    });
    let mut pod = apply(None, &created, &manager("kubectl", "v1", None), false, def, "2026-11-30T09:59:58Z").unwrap();
    let mut scheduled = pod.clone();
    scheduled["spec"]["nodeName"] = json!("node-17");
    update(Some(&pod), &mut scheduled, &manager("kube-scheduler", "v1", None), def, "2026-11-30T09:59:59Z");
    pod = scheduled;
    let mut running = pod.clone();
    running["status"] = pod_status("True");
    update(Some(&pod), &mut running, &manager("kubelet", "v1", Some("status")), def, "2026-11-30T10:00:02Z");
    running
}

/// Times `UPDATES` updates of `old` to `new` (each on a fresh copy of `new`), best of `ROUNDS`.
fn measure(label: &str, old: &Value, new: &Value, m: &Manager, def: &str) {
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..UPDATES {
            let mut n = new.clone();
            update(Some(black_box(old)), &mut n, m, def, "2026-11-30T10:05:00Z");
            black_box(n);
        }
        best = best.min(start.elapsed().as_secs_f64() / UPDATES as f64);
    }
    let start = Instant::now();
    for _ in 0..UPDATES {
        black_box(new.clone());
    }
    let copy = start.elapsed().as_secs_f64() / UPDATES as f64;
    println!("{label:<44} {:>8.2} µs an update ({:.2} µs of it copying the object)", best * 1e6, copy * 1e6);
}

fn main() {
    let def = "io.k8s.api.core.v1.ConfigMap";
    let data: serde_json::Map<String, Value> = (0..8).map(|i| (format!("key-{i}"), json!("x".repeat(110)))).collect();
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": data});
    update(None, &mut cm, &manager("bench", "v1", None), def, "2026-11-30T10:00:00Z");
    let mut cm2 = cm.clone();
    cm2["data"]["key-3"] = json!("y".repeat(110));
    measure("ConfigMap, one value changed", &cm, &cm2, &manager("bench", "v1", None), def);

    let def = "io.k8s.api.core.v1.Pod";
    let pod = pod();
    let mut labelled = pod.clone();
    labelled["metadata"]["labels"]["tier"] = json!("frontend");
    measure("Pod, a label added (a fourth manager)", &pod, &labelled, &manager("kubectl-label", "v1", None), def);
    let mut not_ready = pod.clone();
    not_ready["status"] = pod_status("False");
    measure("Pod status, readiness changed (kubelet)", &pod, &not_ready, &manager("kubelet", "v1", Some("status")), def);
    let mut stripped = pod.clone();
    stripped["spec"]["containers"][1]["env"].as_array_mut().unwrap().truncate(1);
    measure("Pod, two env entries removed (kubectl)", &pod, &stripped, &manager("kubectl", "v1", None), def);
}

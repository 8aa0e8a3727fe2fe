//! kube-apiserver's default admission plugins against the real binary, with kubectl: what
//! Priority, DefaultTolerationSeconds, TaintNodesByCondition, RuntimeClass, DefaultIngressClass,
//! DefaultStorageClass, StorageObjectInUseProtection, PersistentVolumeClaimResize and
//! CertificateSubjectRestriction add to objects and refuse, in Kubernetes' words; plugins turned
//! off and on by flag, and unknown names refused at start.

use crate::common;

use std::process::Command;

use base64::Engine;
use common::TestServer;
use serde_json::{json, Value};

fn created(server: &TestServer, object: Value) -> Value {
    server.kubectl_create(&object).unwrap_or_else(|e| panic!("create: {e}"))
}

fn refused(server: &TestServer, object: Value, message: &str) {
    let err = server.kubectl_create(&object).expect_err("should be refused");
    assert!(err.contains(message), "expected {message:?} in {err}");
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "registry.k8s.io/pause:3.10"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

#[tokio::test]
async fn pods_get_priority_tolerations_and_runtime_class() {
    let server = TestServer::start().await;

    // DefaultTolerationSeconds and Priority without a default class.
    let plain = created(&server, pod("plain", json!({})));
    let tolerations = json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]);
    assert_eq!(plain["spec"]["tolerations"], tolerations);
    assert_eq!((&plain["spec"]["priority"], &plain["spec"]["preemptionPolicy"]), (&json!(0), &json!("PreemptLowerPriority")));
    // A pod tolerating every NoExecute taint gets nothing added.
    let tolerant = created(&server, pod("tolerant", json!({"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]})));
    assert_eq!(tolerant["spec"]["tolerations"].as_array().unwrap().len(), 1);

    // Priority: a class by name, the default class, a missing class, a priority of its own.
    created(&server, json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}));
    created(&server, json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "fallback"}, "value": 10, "globalDefault": true}));
    let high = created(&server, pod("high", json!({"priorityClassName": "high"})));
    assert_eq!((&high["spec"]["priority"], &high["spec"]["preemptionPolicy"]), (&json!(1000), &json!("Never")));
    let defaulted = created(&server, pod("defaulted", json!({})));
    assert_eq!((&defaulted["spec"]["priorityClassName"], &defaulted["spec"]["priority"]), (&json!("fallback"), &json!(10)));
    refused(&server, pod("missing", json!({"priorityClassName": "nope"})), r#"pods "missing" is forbidden: no PriorityClass with name nope was found"#);
    refused(&server, pod("own", json!({"priorityClassName": "high", "priority": 5})),
        r#"pods "own" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"#);
    refused(&server, json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "second"}, "value": 20, "globalDefault": true}),
        r#"priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass fallback is already marked as default. Only one default can exist"#);

    // RuntimeClass: missing, overhead and scheduling merged, a conflicting node selector.
    refused(&server, pod("no-class", json!({"runtimeClassName": "gvisor"})), r#"pods "no-class" is forbidden: pod rejected: RuntimeClass "gvisor" not found"#);
    created(&server, json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        "scheduling": {"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}));
    let sandboxed = created(&server, pod("sandboxed", json!({"runtimeClassName": "gvisor", "nodeSelector": {"zone": "a"}})));
    assert_eq!(sandboxed["spec"]["overhead"], json!({"cpu": "250m", "memory": "64Mi"}));
    assert_eq!(sandboxed["spec"]["nodeSelector"], json!({"sandbox": "gvisor", "zone": "a"}));
    assert!(sandboxed["spec"]["tolerations"].as_array().unwrap().iter().any(|t| t["key"] == "sandbox"), "{sandboxed}");
    refused(&server, pod("conflict", json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "kata"}})),
        r#"pods "conflict" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"#);
    refused(&server, pod("overhead", json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}})), "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead");
    refused(&server, pod("no-overhead", json!({"overhead": {"cpu": "1"}})), "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead");
}

#[tokio::test]
async fn nodes_claims_ingresses_and_requests() {
    let server = TestServer::start().await;

    // TaintNodesByCondition.
    let node = created(&server, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
    assert_eq!(node["spec"]["taints"], json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]));

    // DefaultStorageClass (the newest default) and StorageObjectInUseProtection.
    let claim = |name: &str| json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let unclassed = created(&server, claim("before"));
    assert!(unclassed["spec"]["storageClassName"].is_null(), "{unclassed}");
    assert_eq!(unclassed["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    let class = |name: &str, expand: bool| json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "example.com/disk", "allowVolumeExpansion": expand,
        "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
    created(&server, class("older", false));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    created(&server, class("newer", true));
    let classed = created(&server, claim("after"));
    assert_eq!(classed["spec"]["storageClassName"], "newer");
    let volume = created(&server, json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/mnt/pv1"}}}));
    assert_eq!(volume["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));

    // PersistentVolumeClaimResize: only a bound claim of a class that allows expansion grows (an
    // unbound claim's requests are fixed by validation before the plugin looks, as in Kubernetes).
    let grow = |name: &str| server.kubectl(&["patch", "pvc", name, "--type=merge", "-p", r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#]);
    let out = grow("after");
    assert!(String::from_utf8_lossy(&out.stderr).contains("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"), "{out:?}");
    server.kubectl_ok(&["patch", "pvc", "after", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Bound"}}"#]);
    server.kubectl_ok(&["patch", "pvc", "before", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Bound"}}"#]);
    server.kubectl_ok(&["patch", "pvc", "after", "--type=merge", "-p", r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#]);
    let out = grow("before");
    assert!(String::from_utf8_lossy(&out.stderr).contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"), "{out:?}");

    // DefaultIngressClass: an Ingress naming no class gets the default one.
    created(&server, json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}, "spec": {"controller": "k8s.io/ingress-nginx"}}));
    let ingress = |name: &str| json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": "default"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    assert_eq!(created(&server, ingress("web"))["spec"]["ingressClassName"], "nginx");

    // CertificateSubjectRestriction: no client certificate for system:masters.
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "root");
    params.distinguished_name.push(rcgen::DnType::OrganizationName, "system:masters");
    let pem = params.serialize_request(&rcgen::KeyPair::generate().unwrap()).unwrap().pem().unwrap();
    refused(&server, json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "root"},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem), "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}),
        r#"certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"#);
}

#[tokio::test]
async fn plugins_are_chosen_by_flag() {
    let server = TestServer::start_with(&["--disable-admission-plugins=DefaultTolerationSeconds,TaintNodesByCondition", "--default-unreachable-toleration-seconds=60"]).await;
    let plain = created(&server, pod("plain", json!({})));
    assert!(plain["spec"]["tolerations"].is_null(), "{plain}");
    let node = created(&server, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
    assert!(node["spec"]["taints"].is_null(), "{node}");

    let tuned = TestServer::start_with(&["--default-unreachable-toleration-seconds=60"]).await;
    let pod = created(&tuned, pod("tuned", json!({})));
    assert_eq!(pod["spec"]["tolerations"][1]["tolerationSeconds"], 60);

    // Unknown names and a name both enabled and disabled stop the server at start.
    for (flags, message) in [
        (vec!["--enable-admission-plugins=NoSuchPlugin"], "enable-admission-plugins plugin \"NoSuchPlugin\" is unknown"),
        (vec!["--enable-admission-plugins=Priority", "--disable-admission-plugins=Priority"], "\"Priority\" found in both --enable-admission-plugins and --disable-admission-plugins"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_apiserver")).arg("--data-dir").arg(dir.path()).args(["--secure-port", "0"]).args(&flags).output().unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains(message), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[tokio::test]
async fn the_optional_plugins_when_enabled() {
    let server = TestServer::start_with(&["--enable-admission-plugins=AlwaysPullImages,DenyServiceExternalIPs,LimitPodHardAntiAffinityTopology,ExtendedResourceToleration"]).await;
    let mut spec = json!({});
    let gpu = created(&server, {
        let mut p = pod("gpu", spec.take());
        p["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        p["spec"]["containers"][0]["resources"] = json!({"requests": {"example.com/gpu": "1", "cpu": "1"}, "limits": {"example.com/gpu": "1"}});
        p
    });
    assert_eq!(gpu["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert!(gpu["spec"]["tolerations"].as_array().unwrap().contains(&json!({"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"})), "{gpu}");
    let zone_wide = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}]}});
    refused(&server, pod("zonal", json!({"affinity": zone_wide})),
        r#"pods "zonal" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed"#);
    let service = |ips: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"ports": [{"port": 80}], "externalIPs": ips}});
    refused(&server, service(json!(["192.0.2.10"])), r#"services "web" is forbidden: Use of external IPs is denied by admission control"#);
    created(&server, service(json!([])));

    // AlwaysDeny refuses the server's own start-up writes too (it never becomes ready, as with
    // kube-apiserver), but answers.
    let mut deny = TestServer::new(&["--enable-admission-plugins=AlwaysDeny"]);
    deny.launch();
    let refusal = r#"namespaces "n" is forbidden: admission control is denying all modifications"#;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = deny.kubectl(&["create", "namespace", "n"]);
        if String::from_utf8_lossy(&out.stderr).contains(refusal) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{out:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn namespace_plugins() {
    // NamespaceLifecycle (a default): no create in a missing namespace, the server's own
    // namespaces are never deleted.
    let server = TestServer::start().await;
    let out = server.kubectl(&["create", "configmap", "c", "-n", "nowhere"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"namespaces "nowhere" not found"#), "{out:?}");
    let out = server.kubectl(&["delete", "namespace", "kube-public"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"namespaces "kube-public" is forbidden: this namespace may not be deleted"#), "{out:?}");

    // NamespaceAutoProvision instead: the namespace is made on the first create in it (not by a
    // dry run), and without NamespaceLifecycle the server's namespaces may be deleted.
    let auto = TestServer::start_with(&["--enable-admission-plugins=NamespaceAutoProvision", "--disable-admission-plugins=NamespaceLifecycle"]).await;
    auto.kubectl_ok(&["create", "configmap", "c", "-n", "dry", "--dry-run=server"]);
    assert!(!auto.kubectl(&["get", "namespace", "dry"]).status.success());
    auto.kubectl_ok(&["create", "configmap", "c", "-n", "made"]);
    let made: Value = serde_json::from_str(&auto.kubectl_ok(&["get", "namespace", "made", "-o", "json"])).unwrap();
    assert_eq!((&made["status"]["phase"], &made["spec"]["finalizers"]), (&json!("Active"), &json!(["kubernetes"])));
    auto.kubectl_ok(&["get", "configmap", "c", "-n", "made"]);
    auto.kubectl_ok(&["delete", "namespace", "kube-public", "--dry-run=server"]);

    // NamespaceExists alone refuses as NamespaceLifecycle does.
    let exists = TestServer::start_with(&["--enable-admission-plugins=NamespaceExists", "--disable-admission-plugins=NamespaceLifecycle"]).await;
    let out = exists.kubectl(&["create", "configmap", "c", "-n", "nowhere"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"namespaces "nowhere" not found"#), "{out:?}");
}

/// An `ImageReview` answer refusing images whose name says `forbidden`.
fn image_review(review: &Value) -> (std::time::Duration, u16, Value) {
    let refused = review["spec"]["containers"].as_array().into_iter().flatten().any(|c| c["image"].as_str().unwrap_or_default().contains("forbidden"));
    let status = match refused {
        true => json!({"allowed": false, "reason": "image forbidden"}),
        false => json!({"allowed": true, "auditAnnotations": {"checked": "yes"}}),
    };
    (std::time::Duration::ZERO, 200, json!({"apiVersion": "imagepolicy.k8s.io/v1alpha1", "kind": "ImageReview", "status": status}))
}

/// The flags enabling ImagePolicyWebhook with `image_policy` as its configuration, in `dir`.
fn image_policy_flags(dir: &std::path::Path, image_policy: Value) -> Vec<String> {
    let config = json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
        "plugins": [{"name": "ImagePolicyWebhook", "configuration": {"imagePolicy": image_policy}}]});
    let file = dir.join("admission.json");
    std::fs::write(&file, config.to_string()).unwrap();
    vec!["--enable-admission-plugins=ImagePolicyWebhook".into(), format!("--admission-control-config-file={}", file.display())]
}

#[tokio::test(flavor = "multi_thread")]
async fn image_policy_webhook_reviews_pod_images() {
    let webhook = common::webhook_server::WebhookServer::start(std::sync::Arc::new(image_review)).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&kubeconfig);
    let policy = dir.path().join("audit-policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [pods]}]\n").unwrap();
    let log = dir.path().join("audit.log");
    let mut flags = image_policy_flags(dir.path(), json!({"kubeConfigFile": kubeconfig, "allowTTL": 50, "denyTTL": 50, "retryBackoff": 1}));
    flags.extend(["--audit-policy-file".to_string(), policy.display().to_string(), "--audit-log-path".into(), log.display().to_string()]);
    let server = TestServer::start_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;

    let mut annotated = pod("allowed", json!({"initContainers": [{"name": "init", "image": "registry.k8s.io/busybox"}]}));
    annotated["metadata"]["annotations"] = json!({"team.image-policy.k8s.io/ticket": "T-1", "unrelated": "x"});
    created(&server, annotated);
    let review = webhook.received().pop().expect("the webhook was asked");
    assert_eq!(review["apiVersion"], "imagepolicy.k8s.io/v1alpha1");
    assert_eq!(review["spec"], json!({"containers": [{"image": "registry.k8s.io/pause:3.10"}, {"image": "registry.k8s.io/busybox"}],
        "annotations": {"team.image-policy.k8s.io/ticket": "T-1"}, "namespace": "default"}));
    // The log's writer gathers events for a few milliseconds before it writes them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let audited = std::fs::read_to_string(&log).unwrap();
        if audited.contains(r#""imagepolicywebhook.image-policy.k8s.io/checked":"yes""#) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{audited}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let mut bad = pod("bad", json!({}));
    bad["spec"]["containers"][0]["image"] = json!("example.com/forbidden:1");
    refused(&server, bad.clone(), r#"pods "bad" is forbidden: image policy webhook backend denied one or more images: image forbidden"#);
    // The refusal is remembered for denyTTL: the webhook is not asked again.
    let asked = webhook.received().len();
    bad["metadata"]["name"] = json!("bad-again");
    refused(&server, bad, r#"pods "bad-again" is forbidden: image policy webhook backend denied one or more images: image forbidden"#);
    assert_eq!(webhook.received().len(), asked);

    // A webhook that fails refuses pods, or admits them marked with defaultAllow.
    webhook.answer_with(std::sync::Arc::new(|_: &Value| (std::time::Duration::ZERO, 500, json!({}))));
    refused(&server, pod("unreviewed", json!({})), r#"pods "unreviewed" is forbidden: Error contacting webhook: 500"#);
    let open_dir = tempfile::tempdir().unwrap();
    let open = TestServer::start_with(&image_policy_flags(open_dir.path(), json!({"kubeConfigFile": kubeconfig, "defaultAllow": true, "retryBackoff": 1})).iter().map(String::as_str).collect::<Vec<_>>()).await;
    let admitted = created(&open, pod("unreviewed", json!({})));
    assert_eq!(admitted["metadata"]["annotations"]["alpha.image-policy.k8s.io/failed-open"], "true");

    // A configuration out of bounds stops the server at start.
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .arg("--data-dir").arg(dir.path().join("data")).args(["--secure-port", "0"])
        .args(image_policy_flags(open_dir.path(), json!({"kubeConfigFile": kubeconfig, "allowTTL": 3000})))
        .output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("valid value is between 1s and 30m0s, got 50m0s"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test]
async fn bound_pods_get_their_nodes_topology_labels() {
    let server = TestServer::start().await;
    let labels = json!({"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1", "kubernetes.io/hostname": "n1"});
    created(&server, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels}}));
    let placed = created(&server, pod("placed", json!({"nodeName": "n1"})));
    assert_eq!(placed["metadata"]["labels"], json!({"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}));
    assert!(created(&server, pod("pending", json!({})))["metadata"]["labels"].is_null());
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "pending", "labels": {"team": "a"}}, "target": {"kind": "Node", "name": "n1"}});
    let req = http::Request::post("/api/v1/namespaces/default/pods/pending/binding").header("content-type", "application/json").body(binding.to_string().into_bytes()).unwrap();
    assert_eq!(server.request(req).await.status, 201);
    let bound: Value = serde_json::from_str(&server.kubectl_ok(&["get", "pod", "pending", "-o", "json"])).unwrap();
    assert_eq!(bound["metadata"]["labels"], json!({"team": "a", "topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}));

    // Its feature gate off, the plugin does nothing.
    let off = TestServer::start_with(&["--feature-gates=PodTopologyLabelsAdmission=false"]).await;
    created(&off, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels}}));
    assert!(created(&off, pod("placed", json!({"nodeName": "n1"})))["metadata"]["labels"].is_null());
}

//! Services' node ports against the real binary: a NodePort or LoadBalancer Service gets one
//! from `--service-node-port-range` for each port that names none; a port it names must lie in
//! the range and be free; an update keeps them, a change to ClusterIP and a delete give them
//! back; a local LoadBalancer holds a health check port too. Kubernetes' strategy warnings
//! reach kubectl.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

fn service(name: &str, ty: &str, node_port: Option<u16>) -> Value {
    let mut port = json!({"port": 80});
    if let Some(n) = node_port {
        port["nodePort"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"type": ty, "selector": {"app": name}, "ports": [port]}})
}

fn post(body: &Value) -> http::Request<Vec<u8>> {
    http::Request::post("/api/v1/namespaces/default/services").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn node_ports_are_allocated_checked_kept_and_released() {
    let s = TestServer::start_with(&["--service-node-port-range", "30000-30002"]).await;
    let created = s.request(post(&service("a", "NodePort", None))).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let a = created.json();
    let port = a["spec"]["ports"][0]["nodePort"].as_u64().expect("a node port");
    assert!((30000..=30002).contains(&port), "{a}");
    assert_eq!(a["spec"]["externalTrafficPolicy"], "Cluster");

    // The port is taken; one outside the range is refused; a load balancer gets one too.
    let taken = s.request(post(&service("b", "NodePort", Some(port as u16)))).await;
    let status = taken.expect_status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["message"], format!("Invalid value: {port}: provided port is already allocated"), "{status}");
    let outside = s.request(post(&service("c", "NodePort", Some(31000)))).await.expect_status(422, "Invalid");
    assert_eq!(
        outside["details"]["causes"][0]["message"],
        "Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30002"
    );
    let lb = s.request(post(&service("lb", "LoadBalancer", None))).await.json();
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    let lb_port = lb["spec"]["ports"][0]["nodePort"].as_u64().expect("a node port");
    assert_ne!(lb_port, port);

    // kubectl shows the mapping; an update that leaves the node port out keeps it.
    let listed = s.kubectl_ok(&["get", "service", "a"]);
    assert!(listed.contains(&format!("80:{port}/TCP")), "{listed}");
    s.kubectl_ok(&["patch", "service", "a", "--type=json", "-p", r#"[{"op": "remove", "path": "/spec/ports/0/nodePort"}]"#]);
    assert_eq!(s.kubectl_ok(&["get", "service", "a", "-o", "jsonpath={.spec.ports[0].nodePort}"]), port.to_string());

    // Becoming a ClusterIP Service gives the port back: another Service can take it.
    s.kubectl_ok(&["patch", "service", "a", "-p", r#"{"spec": {"type": "ClusterIP"}}"#]);
    let a = s.get("/api/v1/namespaces/default/services/a").await.json();
    assert!(a["spec"]["ports"][0].get("nodePort").is_none() && a["spec"].get("externalTrafficPolicy").is_none(), "{a}");
    let b = s.request(post(&service("b", "NodePort", Some(port as u16)))).await;
    assert_eq!(b.status, 201, "{}", b.text());
    // A delete gives it back too; the last free port goes to a new Service, then none is left.
    s.kubectl_ok(&["delete", "service", "b"]);
    let c = s.request(post(&service("c", "NodePort", Some(port as u16)))).await;
    assert_eq!(c.status, 201, "{}", c.text());
    let d = s.request(post(&service("d", "NodePort", None))).await;
    assert_eq!(d.status, 201, "{}", d.text());
    let full = s.request(post(&service("e", "NodePort", None))).await;
    assert_eq!(full.status, 500, "{}", full.text());
    assert!(full.text().contains("range is full"), "{}", full.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_load_balancer_gets_a_health_check_port_and_warnings_reach_kubectl() {
    let s = TestServer::start_with(&["--service-node-port-range", "30000-30004"]).await;
    let mut lb = service("lb", "LoadBalancer", None);
    lb["spec"]["externalTrafficPolicy"] = json!("Local");
    let created = s.request(post(&lb)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let lb = created.json();
    let (port, health) = (lb["spec"]["ports"][0]["nodePort"].as_u64().unwrap(), lb["spec"]["healthCheckNodePort"].as_u64().expect("a health check port"));
    assert!((30000..=30004).contains(&health) && health != port, "{lb}");
    // The health check port is held like the others; an update that leaves it out keeps it.
    let taken = s.request(post(&service("other", "NodePort", Some(health as u16)))).await.expect_status(422, "Invalid");
    assert_eq!(taken["details"]["causes"][0]["message"], format!("Invalid value: {health}: provided port is already allocated"));
    s.kubectl_ok(&["patch", "service", "lb", "--type=json", "-p", r#"[{"op": "remove", "path": "/spec/healthCheckNodePort"}]"#]);
    assert_eq!(s.kubectl_ok(&["get", "service", "lb", "-o", "jsonpath={.spec.healthCheckNodePort}"]), health.to_string());
    // Back to the Cluster policy: the port is given back and another Service takes it.
    s.kubectl_ok(&["patch", "service", "lb", "-p", r#"{"spec": {"externalTrafficPolicy": "Cluster"}}"#]);
    let other = s.request(post(&service("other", "NodePort", Some(health as u16)))).await;
    assert_eq!(other.status, 201, "{}", other.text());

    // Kubernetes' strategy warnings reach kubectl: external IPs, then a pod-making workload whose
    // name is no DNS label and whose template uses a replaced node label.
    let out = s.kubectl(&["patch", "service", "other", "-p", r#"{"spec": {"externalIPs": ["192.0.2.10"]}}"#]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Warning: spec.externalIPs is deprecated and may no longer be implemented in some clusters"), "{out:?}");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web.v2"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"nodeSelector": {"beta.kubernetes.io/os": "linux"}, "containers": [{"name": "c", "image": "nginx"}]}}}});
    let mut create = s.kubectl_command(&["create", "-f", "-"]);
    create.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = create.spawn().expect("run kubectl");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), deployment.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.contains("Warning: metadata.name: this is used in Pod names and hostnames"), "{stderr}");
    assert!(stderr.contains("Warning: spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead"), "{stderr}");
}

#[tokio::test]
async fn the_kubernetes_service_publishes_the_advertised_address() {
    // As e2e's "API Server should have Endpoints and EndpointSlices pointing to API Server"
    // finds them: Endpoints, and the EndpointSlice by its service-name label.
    let s = TestServer::start_with(&["--advertise-address", "10.0.0.10"]).await;
    let port = s.port() as i64;
    let https = json!([{"name": "https", "port": port, "protocol": "TCP"}]);
    let endpoints = s.get("/api/v1/namespaces/default/endpoints/kubernetes").await.json();
    assert_eq!(endpoints["subsets"], json!([{"addresses": [{"ip": "10.0.0.10"}], "ports": https}]), "{endpoints}");
    let slices: Value = serde_json::from_str(&s.kubectl_ok(&["get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes", "-o", "json"])).unwrap();
    let slice = &slices["items"][0];
    assert_eq!((&slice["metadata"]["name"], &slice["addressType"]), (&json!("kubernetes"), &json!("IPv4")), "{slices}");
    assert_eq!(slice["endpoints"], json!([{"addresses": ["10.0.0.10"], "conditions": {"ready": true}}]), "{slices}");
    assert_eq!(slice["ports"], https, "{slices}");

    // A loopback address is no EndpointSlice's (Kubernetes' validation refuses it): Endpoints only.
    let local = TestServer::start().await;
    let endpoints = local.get("/api/v1/namespaces/default/endpoints/kubernetes").await.json();
    assert_eq!(endpoints["subsets"][0]["addresses"], json!([{"ip": "127.0.0.1"}]), "{endpoints}");
    assert_eq!(local.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").await.status, 404);
}

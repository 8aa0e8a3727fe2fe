//! Writes through kube-rs against the real binary: create/get/list/update/patch/delete of
//! ConfigMaps, Pods, Deployments, Services and Namespaces, generateName, conflicts, validation
//! errors with causes, defaulting, generation, cluster IP allocation, Secret `stringData`, and
//! `--quota-backend-bytes` (past it only deletes, until they bring the state back under).

use crate::common;

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::{api_error, configmap, names, rv, TestServer};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::{IPAddress, IPAddressSpec, ParentReference, ServiceCIDR, ServiceCIDRSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }))
    .unwrap()
}

/// A Deployment; `strategy` is left out when null.
fn deployment(name: &str, strategy: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "strategy": strategy,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

fn service(name: &str, cluster_ip: Option<&str>) -> Service {
    let mut spec = json!({"selector": {"app": name}, "ports": [{"port": 80}]});
    if let Some(ip) = cluster_ip {
        spec["clusterIP"] = json!(ip);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

async fn json_patch(s: &TestServer, path: &str, ops: serde_json::Value) -> common::Reply {
    let req = http::Request::patch(path)
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops).unwrap())
        .unwrap();
    s.request(req).await
}

/// Asserts a 422 Invalid whose causes name `field`.
fn assert_invalid_field(status: &kube::core::Status, field: &str) {
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{status:?}");
    let causes = &status.details.as_ref().expect("Invalid without details").causes;
    assert!(causes.iter().any(|c| c.field == field), "no cause on {field}: {status:?}");
}

#[tokio::test]
async fn configmap_create_get_list_update_delete() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");

    let created = api.create(&PostParams::default(), &configmap("cfg", &[("app", "a")])).await.unwrap();
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some_and(|u| !u.is_empty()));
    assert!(created.creation_timestamp().is_some());
    let got = api.get("cfg").await.unwrap();
    assert_eq!((got.uid(), rv(&got)), (created.uid(), rv(&created)));
    assert_eq!(got.data, created.data);
    assert_eq!(names(&api.list(&ListParams::default()).await.unwrap()), ["cfg"]);

    let exists = api_error(api.create(&PostParams::default(), &configmap("cfg", &[])).await);
    assert_eq!((exists.code, exists.reason.as_str()), (409, "AlreadyExists"), "{exists:?}");
    assert_eq!(exists.details.unwrap().name, "cfg");

    let mut changed = created.clone();
    changed.data = Some([("key".to_string(), "new".to_string())].into());
    let updated = api.replace("cfg", &PostParams::default(), &changed).await.unwrap();
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated.data.as_ref().unwrap()["key"], "new");
    assert_eq!(updated.uid(), created.uid());
    // The same, now stale, resourceVersion again.
    let stale = api_error(api.replace("cfg", &PostParams::default(), &changed).await);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"), "{stale:?}");
    assert_eq!(api.get("cfg").await.unwrap().data, updated.data);

    api.delete("cfg", &DeleteParams::default()).await.unwrap();
    let gone = api_error(api.get("cfg").await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"), "{gone:?}");
    assert!(api.list(&ListParams::default()).await.unwrap().items.is_empty());
    let again = api_error(api.delete("cfg", &DeleteParams::default()).await);
    assert_eq!(again.code, 404);
    // The name is free again.
    api.create(&PostParams::default(), &configmap("cfg", &[])).await.unwrap();
}

#[tokio::test]
async fn merge_patch_json_patch_and_failed_test_op() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = api.create(&PostParams::default(), &configmap("p", &[("app", "a")])).await.unwrap();

    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"extra": "1"}, "metadata": {"labels": {"app": null}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data.as_ref().unwrap()["key"], "value");
    assert_eq!(merged.data.as_ref().unwrap()["extra"], "1");
    assert!(!merged.labels().contains_key("app"));
    assert!(rv(&merged) > rv(&created));

    let path = "/api/v1/namespaces/default/configmaps/p";
    let ok = json_patch(
        &s,
        path,
        json!([
            {"op": "test", "path": "/data/extra", "value": "1"},
            {"op": "replace", "path": "/data/key", "value": "patched"},
            {"op": "remove", "path": "/data/extra"},
        ]),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let patched = api.get("p").await.unwrap();
    assert_eq!(patched.data, Some([("key".to_string(), "patched".to_string())].into()));
    assert_eq!(ok.json()["metadata"]["resourceVersion"], patched.resource_version().unwrap());

    // A failing `test` op rejects the whole patch: 422 and nothing changes.
    json_patch(
        &s,
        path,
        json!([
            {"op": "replace", "path": "/data/key", "value": "should-not-stick"},
            {"op": "test", "path": "/data/key", "value": "something-else"},
        ]),
    )
    .await
    .expect_status(422, "Invalid");
    let after = api.get("p").await.unwrap();
    assert_eq!((rv(&after), &after.data), (rv(&patched), &patched.data));
    // A patch document that is not a JSON patch at all is a bad request.
    json_patch(&s, path, json!({"op": "replace"})).await.expect_status(400, "BadRequest");

    // A patch carrying a stale resourceVersion is a conditional write: 409.
    let conditional = json!({"metadata": {"resourceVersion": created.resource_version()}, "data": {"x": "y"}});
    let err = api_error(api.patch("p", &PatchParams::default(), &Patch::Merge(conditional)).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"), "{err:?}");
    // A patch of a missing object is 404.
    let err = api_error(api.patch("missing", &PatchParams::default(), &Patch::Merge(json!({"data": {}}))).await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"), "{err:?}");
}

#[tokio::test]
async fn generate_name_gives_distinct_names() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let template: ConfigMap = serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let mut seen = HashSet::new();
    for _ in 0..5 {
        let created = api.create(&PostParams::default(), &template).await.unwrap();
        let name = created.name_any();
        assert!(name.starts_with("gen-") && name.len() > "gen-".len(), "{name}");
        assert_eq!(api.get(&name).await.unwrap().uid(), created.uid());
        assert!(seen.insert(name), "generateName produced a name twice");
    }
}

#[tokio::test]
async fn invalid_objects_get_422_with_causes() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for bad in ["Upper_Case", "-leading-dash", "has space", &"x".repeat(254)] {
        let err = api_error(cms.create(&PostParams::default(), &configmap(bad, &[])).await);
        assert_invalid_field(&err, "metadata.name");
    }
    let err = api_error(cms.create(&PostParams::default(), &configmap("ok", &[("bad label!", "v")])).await);
    assert_invalid_field(&err, "metadata.labels");
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty(), "an invalid object was stored");

    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let no_containers: Pod =
        serde_json::from_value(json!({"metadata": {"name": "empty"}, "spec": {"containers": []}})).unwrap();
    let err = api_error(pods.create(&PostParams::default(), &no_containers).await);
    assert_invalid_field(&err, "spec.containers");
    assert_eq!(api_error(pods.get("empty").await).code, 404);
}

#[tokio::test]
async fn pod_defaults_and_lifecycle() {
    let s = TestServer::start().await;
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let created = pods.create(&PostParams::default(), &pod("web")).await.unwrap();
    let spec = created.spec.as_ref().unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(spec.containers[0].termination_message_path.as_deref(), Some("/dev/termination-log"));
    assert_eq!(spec.containers[0].image_pull_policy.as_deref(), Some("Always"));
    assert_eq!(created.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
    // Defaults are stored, not only shown on create.
    assert_eq!(pods.get("web").await.unwrap().spec, created.spec);

    let labelled = pods
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"tier": "fe"}}})))
        .await
        .unwrap();
    assert_eq!(labelled.labels()["tier"], "fe");
    assert_eq!(names(&pods.list(&ListParams::default().labels("tier=fe")).await.unwrap()), ["web"]);
    pods.delete("web", &DeleteParams::default().grace_period(0)).await.unwrap();
    assert_eq!(api_error(pods.get("web").await).code, 404);
}

#[tokio::test]
async fn deployment_defaults_and_generation() {
    let s = TestServer::start().await;
    let api: Api<Deployment> = Api::namespaced(s.client(), "default");
    // An absent and an empty strategy (as `kubectl create deployment` sends) get the same defaults.
    for (name, strategy) in [("empty-strategy", json!({})), ("web", json!(null))] {
        let created = api.create(&PostParams::default(), &deployment(name, strategy)).await.unwrap();
        assert_eq!(created.metadata.generation, Some(1));
        let spec = created.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(1));
        let strategy = spec.strategy.as_ref().unwrap_or_else(|| panic!("{name}: no strategy"));
        assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"), "{name}");
        let rolling = strategy.rolling_update.as_ref().unwrap_or_else(|| panic!("{name}: no rollingUpdate"));
        let quarter = Some(IntOrString::String("25%".into()));
        assert_eq!((&rolling.max_surge, &rolling.max_unavailable), (&quarter, &quarter), "{name}");
        assert_eq!(spec.revision_history_limit, Some(10));
        assert_eq!(spec.progress_deadline_seconds, Some(600));
    }

    let scaled =
        api.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
    assert_eq!((scaled.metadata.generation, scaled.spec.as_ref().unwrap().replicas), (Some(2), Some(3)));
    // A metadata-only change leaves the generation alone.
    let labelled = api
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));
    // A spec change through PUT bumps it too.
    let mut next = labelled.clone();
    next.spec.as_mut().unwrap().template.spec.as_mut().unwrap().containers[0].image = Some("nginx:2".into());
    let replaced = api.replace("web", &PostParams::default(), &next).await.unwrap();
    assert_eq!(replaced.metadata.generation, Some(3));

    api.delete("web", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(api.get("web").await).code, 404);
}

#[tokio::test]
async fn services_get_defaults_and_unique_cluster_ips() {
    let s = TestServer::start().await;
    let api: Api<Service> = Api::namespaced(s.client(), "default");
    let range = ipnet::Ipv4Net::new(Ipv4Addr::new(10, 96, 0, 0), 12).unwrap();
    let creates = (0..12).map(|i| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &service(&format!("svc-{i}"), None)).await.unwrap() }
    });
    let created = futures::future::join_all(creates).await;
    let mut ips = HashSet::new();
    for svc in &created {
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.session_affinity.as_deref(), Some("None"));
        let ip = spec.cluster_ip.clone().expect("no clusterIP");
        assert_eq!(spec.cluster_ips.as_deref(), Some(std::slice::from_ref(&ip)));
        let ip: Ipv4Addr = ip.parse().unwrap();
        assert!(range.contains(&ip), "{ip} outside 10.96.0.0/12");
        assert!(ips.insert(ip), "{ip} handed to two services");
    }
    // Asking for an address that is taken is refused; a free one is granted.
    let taken = created[0].spec.as_ref().unwrap().cluster_ip.clone().unwrap();
    let err = api_error(api.create(&PostParams::default(), &service("dup", Some(&taken))).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    let free =
        (10..250).map(|n| format!("10.100.7.{n}")).find(|ip| !ips.contains(&ip.parse::<Ipv4Addr>().unwrap())).unwrap();
    let chosen = api.create(&PostParams::default(), &service("chosen", Some(&free))).await.unwrap();
    assert_eq!(chosen.spec.as_ref().unwrap().cluster_ip, Some(free));
    // Headless services keep `None`.
    let headless = api.create(&PostParams::default(), &service("headless", Some("None"))).await.unwrap();
    assert_eq!(headless.spec.unwrap().cluster_ip.as_deref(), Some("None"));

    // An update that leaves the IPs out keeps them; one that changes them is refused, so the
    // address stays reserved for this service alone.
    let mut replacement = service("chosen", None);
    replacement.metadata.resource_version = chosen.metadata.resource_version.clone();
    let replaced = api.replace("chosen", &PostParams::default(), &replacement).await.unwrap();
    assert_eq!(replaced.spec.as_ref().unwrap().cluster_ips, chosen.spec.as_ref().unwrap().cluster_ips);
    let moved = Patch::Merge(json!({"spec": {"clusterIP": "10.100.8.8", "clusterIPs": ["10.100.8.8"]}}));
    let err = api_error(api.patch("chosen", &PatchParams::default(), &moved).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    assert!(err.message.contains("spec.clusterIPs[0]: Invalid value: [\"10.100.8.8\"]: may not change once set"), "{err:?}");
    assert_eq!(api.get("chosen").await.unwrap().spec.unwrap().cluster_ip, replaced.spec.unwrap().cluster_ip);

    // The `kubernetes` Service holds the first address of the range.
    let kubernetes = api.get("kubernetes").await.unwrap();
    assert_eq!(kubernetes.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));
}

#[tokio::test]
async fn cluster_ips_are_ipaddress_objects_from_service_cidrs() {
    let s = TestServer::start().await;
    let services: Api<Service> = Api::namespaced(s.client(), "default");
    let addresses: Api<IPAddress> = Api::all(s.client());
    let cidrs: Api<ServiceCIDR> = Api::all(s.client());
    // The range of the flag is the `kubernetes` ServiceCIDR, ready once the server is.
    let default = cidrs.get("kubernetes").await.unwrap();
    assert_eq!(default.spec.unwrap().cidrs, Some(vec!["10.96.0.0/12".to_string()]));
    let ready = &default.status.unwrap().conditions.unwrap()[0];
    assert_eq!((ready.type_.as_str(), ready.status.as_str()), ("Ready", "True"));

    // Each cluster IP is held by an IPAddress naming its Service; deleting the Service frees it.
    let web = services.create(&PostParams::default(), &service("web", None)).await.unwrap();
    let ip = web.spec.unwrap().cluster_ip.unwrap();
    let held = addresses.get(&ip).await.unwrap();
    let parent = held.spec.clone().parent_ref;
    assert_eq!((parent.resource.as_str(), parent.namespace.as_deref(), parent.name.as_str()), ("services", Some("default"), "web"));
    assert_eq!(held.labels().get("ipaddress.kubernetes.io/managed-by").map(String::as_str), Some("ipallocator.k8s.io"));
    let kubernetes = addresses.get("10.96.0.1").await.unwrap();
    assert_eq!(kubernetes.spec.parent_ref.name, "kubernetes");
    let table = s.kubectl_ok(&["get", "ipaddresses", &ip]);
    assert!(table.contains("PARENTREF") && table.contains("services/default/web"), "{table}");

    // An address someone else holds cannot be allocated.
    let reserved = IPAddress {
        metadata: kube::api::ObjectMeta { name: Some("10.96.3.3".into()), ..Default::default() },
        spec: IPAddressSpec { parent_ref: ParentReference { resource: "gateways".into(), name: "gw".into(), ..Default::default() } },
    };
    addresses.create(&PostParams::default(), &reserved).await.unwrap();
    let err = api_error(services.create(&PostParams::default(), &service("taken", Some("10.96.3.3"))).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");

    // A second ServiceCIDR widens what may be asked for.
    let outside = api_error(services.create(&PostParams::default(), &service("far", Some("172.30.0.10"))).await);
    assert_eq!(outside.code, 422, "{outside:?}");
    let extra = ServiceCIDR {
        metadata: kube::api::ObjectMeta { name: Some("extra".into()), ..Default::default() },
        spec: Some(ServiceCIDRSpec { cidrs: Some(vec!["172.30.0.0/24".into()]) }),
        status: None,
    };
    cidrs.create(&PostParams::default(), &extra).await.unwrap();
    let far = services.create(&PostParams::default(), &service("far", Some("172.30.0.10"))).await.unwrap();
    assert_eq!(far.spec.unwrap().cluster_ip.as_deref(), Some("172.30.0.10"));
    assert!(addresses.get("172.30.0.10").await.is_ok());
    services.delete("web", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(addresses.get(&ip).await).code, 404);

    // Kubernetes' validation of both kinds.
    let bad = |name: &str| IPAddress { metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() }, spec: IPAddressSpec::default() };
    let err = api_error(addresses.create(&PostParams::default(), &bad("10.96.3.4")).await);
    assert!(err.message.contains("spec.parentRef: Required value"), "{err:?}");
    let err = api_error(addresses.create(&PostParams::default(), &bad("010.96.3.4")).await);
    assert_eq!(err.code, 422, "{err:?}");
    let mut overlong = extra.clone();
    overlong.metadata.name = Some("wide".into());
    overlong.spec.as_mut().unwrap().cidrs = Some(vec!["10.1.0.0/16".into(), "10.2.0.0/16".into()]);
    let err = api_error(cidrs.create(&PostParams::default(), &overlong).await);
    assert!(err.message.contains("may specify no more than one IP for each IP family"), "{err:?}");
    overlong.spec.as_mut().unwrap().cidrs = Some(vec!["10.1.0.1/16".into()]);
    let err = api_error(cidrs.create(&PostParams::default(), &overlong).await);
    assert!(err.message.contains("must not have bits set beyond the prefix length"), "{err:?}");
    let moved = Patch::Merge(json!({"spec": {"cidrs": ["172.31.0.0/24"]}}));
    let err = api_error(cidrs.patch("extra", &PatchParams::default(), &moved).await);
    assert!(err.message.contains("field is immutable"), "{err:?}");
}

#[tokio::test]
async fn updates_keep_immutable_fields() {
    let s = TestServer::start().await;
    let invalid = |r: kube::Result<_>| {
        let err = api_error::<()>(r.map(|_: serde_json::Value| ()));
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
        err.message
    };
    let deployments: Api<Deployment> = Api::namespaced(s.client(), "default");
    deployments.create(&PostParams::default(), &deployment("web", json!(null))).await.unwrap();
    let reselect = json!({"spec": {"selector": {"matchLabels": {"app": "other"}}, "template": {"metadata": {"labels": {"app": "other"}}}}});
    let message = invalid(deployments.patch("web", &PatchParams::default(), &Patch::Merge(reselect)).await.map(|_| json!({})));
    assert!(message.starts_with("Deployment.apps \"web\" is invalid: spec.selector"), "{message}");

    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    pods.create(&PostParams::default(), &pod("p")).await.unwrap();
    let policy = Patch::Merge(json!({"spec": {"restartPolicy": "Never"}}));
    assert!(invalid(pods.patch("p", &PatchParams::default(), &policy).await.map(|_| json!({}))).contains("pod updates may not change fields"));
    // As `kubectl set image` sends it: a strategic merge patch, merging containers by name.
    let image = Patch::Strategic(json!({"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}));
    let updated = pods.patch("p", &PatchParams::default(), &image).await.unwrap();
    assert_eq!(updated.spec.unwrap().containers[0].image.as_deref(), Some("busybox:1.36"));

    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut frozen = configmap("frozen", &[]);
    frozen.immutable = Some(true);
    frozen.data = Some([("k".to_string(), "v".to_string())].into());
    cms.create(&PostParams::default(), &frozen).await.unwrap();
    let change = Patch::Merge(json!({"data": {"k": "w"}}));
    assert!(invalid(cms.patch("frozen", &PatchParams::default(), &change).await.map(|_| json!({}))).contains("field is immutable when `immutable` is set"));
    assert_eq!(cms.get("frozen").await.unwrap().data.unwrap()["k"], "v");
}

#[tokio::test]
async fn secret_string_data_is_merged_into_data() {
    let s = TestServer::start().await;
    let api: Api<Secret> = Api::namespaced(s.client(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "creds"},
        "data": {"user": "YWRtaW4=", "token": "b2xk"},
        "stringData": {"token": "new", "extra": "x"},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(created.string_data, None);
    let data = created.data.unwrap();
    let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    assert_eq!((text("user"), text("token"), text("extra")), ("admin".into(), "new".into(), "x".into()));
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
}

#[tokio::test]
async fn namespace_create_use_and_delete() {
    let s = TestServer::start().await;
    let namespaces: Api<Namespace> = Api::all(s.client());
    let all = names(&namespaces.list(&ListParams::default()).await.unwrap());
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert!(all.iter().any(|n| n == ns), "{ns} missing from {all:?}");
    }
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    let created = namespaces.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(created.labels().get("kubernetes.io/metadata.name").map(String::as_str), Some("team-a"));
    assert_eq!(created.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    // The namespaces the server itself needs cannot be deleted.
    for ns in ["default", "kube-system", "kube-public"] {
        let err = api_error(namespaces.delete(ns, &DeleteParams::default()).await);
        assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"), "{err:?}");
        assert!(namespaces.get(ns).await.unwrap().metadata.deletion_timestamp.is_none());
    }
    assert_eq!(created.metadata.namespace, None);

    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "team-a");
    cms.create(&PostParams::default(), &configmap("inside", &[])).await.unwrap();
    let mut held = configmap("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    namespaces.delete("team-a", &DeleteParams::default()).await.unwrap();
    // While it terminates (held by a finalizer), nothing new may be made in it.
    let err = api_error(cms.create(&PostParams::default(), &configmap("during", &[])).await);
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"), "{err:?}");
    assert_eq!(err.message, "configmaps \"during\" is forbidden: unable to create new content in namespace team-a because it is being terminated");
    let terminating = s.request(http::Request::post("/api/v1/namespaces/team-a/configmaps").header("content-type", "application/json")
        .body(serde_json::to_vec(&json!({"metadata": {"name": "during"}})).unwrap()).unwrap()).await.json();
    assert_eq!(terminating["details"]["causes"], json!([{"reason": "NamespaceTerminating", "message": "namespace team-a is being terminated", "field": "metadata.namespace"}]));
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while namespaces.get_opt("team-a").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "namespace team-a still there after 15 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(api_error(cms.get("inside").await).code, 404);
    // Writing into a namespace that does not exist.
    let err = api_error(cms.create(&PostParams::default(), &configmap("late", &[])).await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"), "{err:?}");
}

#[tokio::test]
async fn status_writes_keep_metadata_changes_but_not_spec_changes() {
    let s = TestServer::start().await;
    let merge = |path: &str, body: serde_json::Value| {
        http::Request::patch(path).header("content-type", "application/merge-patch+json").body(body.to_string().into_bytes()).unwrap()
    };
    s.kubectl_ok(&["create", "namespace", "status-ns"]);
    // A namespace's status patch may change its labels and annotations, not its spec.
    let reply = s
        .request(merge(
            "/api/v1/namespaces/status-ns/status",
            json!({"metadata": {"labels": {"e2e": "patched"}, "annotations": {"note": "x"}}, "spec": {"finalizers": []}, "status": {"conditions": [{"type": "StatusPatch", "status": "True"}]}}),
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let ns = reply.json();
    assert_eq!(ns["metadata"]["labels"]["e2e"], "patched");
    assert_eq!(ns["metadata"]["annotations"]["note"], "x");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"]["conditions"][0]["type"], "StatusPatch");

    // A Deployment's status write keeps its stored labels, as Kubernetes' status strategy does.
    let api: Api<Deployment> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &deployment("status-dep", json!({}))).await.unwrap();
    let reply = s
        .request(merge(
            "/apis/apps/v1/namespaces/default/deployments/status-dep/status",
            json!({"metadata": {"labels": {"changed": "yes"}, "annotations": {"kept": "yes"}}, "spec": {"replicas": 7}, "status": {"observedGeneration": 1}}),
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let d = reply.json();
    assert_eq!(d["metadata"]["labels"].get("changed"), None);
    assert_eq!(d["metadata"]["annotations"]["kept"], "yes");
    assert_ne!(d["spec"]["replicas"], 7);
    assert_eq!(d["status"]["observedGeneration"], 1);
}

#[tokio::test]
async fn pods_are_bound_to_nodes_once() {
    let s = TestServer::start().await;
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    pods.create(&PostParams::default(), &pod("sched-me")).await.unwrap();
    let bind = |path: &str, body: serde_json::Value| {
        http::Request::post(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    // As a scheduler binds: pods/{name}/binding.
    let reply = s
        .request(bind(
            "/api/v1/namespaces/default/pods/sched-me/binding",
            json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "sched-me"}, "target": {"kind": "Node", "name": "node-a"}}),
        ))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["status"], "Success");
    let bound = pods.get("sched-me").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-a"));
    let conditions = bound.status.unwrap().conditions.unwrap();
    assert!(conditions.iter().any(|c| c.type_ == "PodScheduled" && c.status == "True"));
    // A bound pod is not bound again; the legacy `bindings` collection says the same.
    let again = s
        .request(bind("/api/v1/namespaces/default/bindings", json!({"metadata": {"name": "sched-me"}, "target": {"name": "node-b"}})))
        .await;
    let body = again.expect_status(409, "Conflict");
    assert!(body["message"].as_str().unwrap().contains("pod sched-me is already assigned to node \"node-a\""), "{body}");
    s.request(bind("/api/v1/namespaces/default/pods/sched-me/binding", json!({"target": {}}))).await.expect_status(422, "Invalid");
    s.request(bind("/api/v1/namespaces/default/pods/ghost/binding", json!({"target": {"name": "n"}}))).await.expect_status(404, "NotFound");
}

#[tokio::test]
async fn evictions_respect_disruption_budgets() {
    let s = TestServer::start().await;
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let labelled = |name: &str| {
        let mut p = pod(name);
        p.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
        p
    };
    for name in ["free", "db-1", "db-2"] {
        let p = if name == "free" { pod(name) } else { labelled(name) };
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let evict = |name: &str| {
        let body = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}});
        http::Request::post(format!("/api/v1/namespaces/default/pods/{name}/eviction")).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    // No budget: the pod is deleted.
    let reply = s.request(evict("free")).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert!(pods.get_opt("free").await.unwrap().is_none());

    // A budget whose status has not been computed refuses.
    s.kubectl_ok(&["create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=1"]);
    let body = s.request(evict("db-1")).await.expect_status(429, "TooManyRequests");
    assert_eq!(body["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    // One disruption allowed: the first eviction takes it, the next is refused.
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}});
    let patch = http::Request::patch("/apis/policy/v1/namespaces/default/poddisruptionbudgets/db/status")
        .header("content-type", "application/merge-patch+json")
        .body(status.to_string().into_bytes())
        .unwrap();
    assert_eq!(s.request(patch).await.status, 200);
    assert_eq!(s.request(evict("db-1")).await.status, 201);
    let pdb = s.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/db").await.json();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"].get("db-1").is_some(), "{pdb}");
    s.request(evict("db-2")).await.expect_status(429, "TooManyRequests");
    assert!(pods.get_opt("db-2").await.unwrap().is_some());
    s.request(evict("ghost")).await.expect_status(404, "NotFound");
}

#[tokio::test]
async fn namespace_finalizers_change_through_finalize() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "fin"]);
    let mut ns = s.get("/api/v1/namespaces/fin").await.json();
    ns["spec"]["finalizers"] = json!(["kubernetes", "e2e.example.com/fakeFinalizer"]);
    ns["status"] = json!({"phase": "Terminating"});
    let put = http::Request::put("/api/v1/namespaces/fin/finalize").header("content-type", "application/json").body(ns.to_string().into_bytes()).unwrap();
    let reply = s.request(put).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let got = s.get("/api/v1/namespaces/fin").await.json();
    assert_eq!(got["spec"]["finalizers"], json!(["kubernetes", "e2e.example.com/fakeFinalizer"]));
    // The status is not the client's to set there.
    assert_eq!(got["status"]["phase"], "Active");
}

/// Polls `check` every 100 ms for up to 5 s.
async fn within_5s(mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn the_ip_repair_restores_a_deleted_ipaddress_and_releases_a_leaked_one() {
    let s = TestServer::start().await;
    let services: Api<Service> = Api::namespaced(s.client(), "default");
    let addresses: Api<IPAddress> = Api::all(s.client());

    // The IPAddress of a Service's cluster IP, deleted by hand, comes back (a new object).
    let db = services.create(&PostParams::default(), &service("db", None)).await.unwrap();
    let ip = db.spec.unwrap().cluster_ip.unwrap();
    let before = addresses.get(&ip).await.unwrap();
    s.kubectl_ok(&["delete", "ipaddress", &ip]);
    let restored = within_5s(async || addresses.get_opt(&ip).await.unwrap().is_some_and(|a| a.uid() != before.uid())).await;
    assert!(restored, "the IPAddress of {ip} was not restored");
    let again = addresses.get(&ip).await.unwrap();
    assert_eq!(again.spec.parent_ref.name, "db");
    // So the address is not handed to another Service.
    let err = api_error(services.create(&PostParams::default(), &service("thief", Some(&ip))).await);
    assert_eq!(err.code, 422, "{err:?}");

    // One the allocator made for a Service that does not hold it is released; one made by
    // someone else stays.
    let ipaddress = |name: &str, service: &str, managed: bool| -> IPAddress {
        let labels = managed.then(|| [("ipaddress.kubernetes.io/managed-by".to_string(), "ipallocator.k8s.io".to_string())].into());
        IPAddress {
            metadata: kube::api::ObjectMeta { name: Some(name.into()), labels, ..Default::default() },
            spec: IPAddressSpec {
                parent_ref: ParentReference { resource: "services".into(), namespace: Some("default".into()), name: service.into(), ..Default::default() },
            },
        }
    };
    addresses.create(&PostParams::default(), &ipaddress("10.96.7.7", "ghost", true)).await.unwrap();
    addresses.create(&PostParams::default(), &ipaddress("10.96.7.8", "db", true)).await.unwrap();
    addresses.create(&PostParams::default(), &ipaddress("10.96.7.9", "ghost", false)).await.unwrap();
    let released = within_5s(async || {
        addresses.get_opt("10.96.7.7").await.unwrap().is_none() && addresses.get_opt("10.96.7.8").await.unwrap().is_none()
    })
    .await;
    assert!(released, "leaked IPAddresses stayed: {}", s.kubectl_ok(&["get", "ipaddresses"]));
    assert!(addresses.get_opt("10.96.7.9").await.unwrap().is_some(), "an IPAddress the allocator did not make was released");
    assert!(addresses.get_opt(&ip).await.unwrap().is_some());
}

/// A Node keeps the status it is created with (a kubelet registers with its own), unlike the
/// other kinds with a status subresource; its pod CIDRs start with its pod CIDR.
#[tokio::test]
async fn a_node_keeps_the_status_it_registers_with() {
    let s = TestServer::start().await;
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}, "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.36.2"}}});
    let created = s.request(http::Request::post("/api/v1/nodes").header("content-type", "application/json").body(node.to_string().into_bytes()).unwrap()).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(created["status"]["nodeInfo"]["kubeletVersion"], "v1.36.2", "{created}");
    assert_eq!(created["spec"]["podCIDRs"], json!(["10.244.1.0/24"]));
    let listed = s.kubectl_ok(&["get", "nodes"]);
    assert!(listed.lines().any(|l| l.starts_with("worker-1") && l.contains("Ready") && l.contains("v1.36.2")), "{listed}");
    // A Deployment's status written on create is still reset.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}},
        "status": {"readyReplicas": 5}});
    let created = s.request(http::Request::post("/apis/apps/v1/namespaces/default/deployments").header("content-type", "application/json").body(deployment.to_string().into_bytes()).unwrap()).await.json();
    assert_eq!(created["status"], json!({}), "{created}");
}

#[tokio::test]
async fn past_the_quota_only_deletes_go_through_until_the_state_is_back_under_it() {
    // Room beside the objects every new server holds for a few more of 400 KB.
    let s = TestServer::start_with(&["--quota-backend-bytes", "3000000"]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let big = |name: &str| {
        let mut cm = configmap(name, &[]);
        cm.data = Some([("v".to_string(), "x".repeat(400_000))].into());
        cm
    };
    let mut created = Vec::new();
    let refused = loop {
        let name = format!("fill-{}", created.len());
        match api.create(&PostParams::default(), &big(&name)).await {
            Ok(_) => created.push(name),
            Err(e) => break e,
        }
        assert!(created.len() < 10, "the quota never refused a write");
    };
    assert!(created.len() >= 2, "only {} fitted", created.len());
    let status = match refused {
        kube::Error::Api(s) => s,
        other => panic!("{other}"),
    };
    assert_eq!((status.code, status.message.as_str()), (500, "Internal error occurred: etcdserver: mvcc: database space exceeded"), "{status:?}");
    // Still ready, as kube-apiserver stays over etcd's space alarm (its check reads a key): a
    // balancer keeps sending the deletes that make room.
    assert_eq!(s.get("/readyz").await.status, 200);
    // Reads go on; a delete goes through and brings the state back under.
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&listed).iter().filter(|n| n.starts_with("fill-")).count(), created.len());
    api.delete(&created[0], &DeleteParams::default()).await.unwrap();
    api.delete(&created[1], &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &configmap("after", &[])).await.unwrap();
}

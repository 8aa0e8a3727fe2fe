//! Table-driven server-side apply and update cases, as Kubernetes' documentation describes
//! them: ownership, conflicts, force, shared ownership, release, each list type.

use serde_json::{json, Value};

use super::*;

const CM: &str = "io.k8s.api.core.v1.ConfigMap";
const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
const NOW: &str = "2026-01-01T00:00:00Z";

fn mgr(name: &str) -> Manager {
    Manager { name: name.into(), api_version: "v1".into(), subresource: None }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

/// The managers of a field, as `manager/Operation`.
fn owners(obj: &Value, p: &[&str]) -> Vec<String> {
    let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
    entries(obj).into_iter().filter(|e| e.set.contains(&p)).map(|e| format!("{}/{}", e.manager, e.operation)).collect()
}

fn apply_as(live: Option<&Value>, applied: Value, who: &str, force: bool) -> Result<Value, ApiError> {
    apply(live, &applied, &mgr(who), force, CM, NOW)
}

#[test]
fn apply_creates_and_owns_what_it_sent() {
    let obj = apply_as(None, cm(json!({"x": "1"})), "a", false).unwrap();
    assert_eq!(obj["data"], json!({"x": "1"}));
    assert_eq!(owners(&obj, &["f:data", "f:x"]), ["a/Apply"]);
    let entry = &obj["metadata"]["managedFields"][0];
    assert_eq!((entry["operation"].as_str(), entry["fieldsType"].as_str(), entry["time"].as_str()), (Some("Apply"), Some("FieldsV1"), Some(NOW)));
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:x": {}}}));
}

#[test]
fn an_apply_that_changes_nothing_changes_nothing() {
    let live = apply_as(None, cm(json!({"x": "1"})), "a", false).unwrap();
    let again = apply(Some(&live), &cm(json!({"x": "1"})), &mgr("a"), false, CM, "2030-01-01T00:00:00Z").unwrap();
    assert_eq!(again, live);
}

#[test]
fn a_different_value_conflicts_unless_forced() {
    let live = apply_as(None, cm(json!({"x": "1"})), "a", false).unwrap();
    let err = apply_as(Some(&live), cm(json!({"x": "2"})), "b", false).unwrap_err();
    assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"a\": .data.x");
    let status = err.status();
    assert_eq!((status["code"].as_u64(), status["reason"].as_str()), (Some(409), Some("Conflict")));
    assert_eq!(status["details"]["causes"], json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".data.x"}]));
    let forced = apply_as(Some(&live), cm(json!({"x": "2"})), "b", true).unwrap();
    assert_eq!(forced["data"]["x"], "2");
    assert_eq!(owners(&forced, &["f:data", "f:x"]), ["b/Apply"]);
}

#[test]
fn the_same_value_is_shared() {
    let live = apply_as(None, cm(json!({"x": "1"})), "a", false).unwrap();
    let shared = apply_as(Some(&live), cm(json!({"x": "1"})), "b", false).unwrap();
    let mut who = owners(&shared, &["f:data", "f:x"]);
    who.sort();
    assert_eq!(who, ["a/Apply", "b/Apply"]);
}

#[test]
fn fields_no_longer_sent_are_released() {
    let live = apply_as(None, cm(json!({"x": "1", "y": "1"})), "a", false).unwrap();
    let shared = apply_as(Some(&live), cm(json!({"y": "1"})), "b", false).unwrap();
    // a drops x (nobody else owns it: removed) and y (b owns it too: kept).
    let out = apply_as(Some(&shared), cm(json!({})), "a", false).unwrap();
    assert_eq!(out["data"], json!({"y": "1"}));
    assert_eq!(owners(&out, &["f:data", "f:y"]), ["b/Apply"]);
}

#[test]
fn a_field_owned_whole_then_in_parts_stays() {
    // The applier owned `data` whole (as under a schema where it was atomic); applying it
    // again item by item keeps it.
    let mut live = cm(json!({"x": "1"}));
    live["metadata"]["managedFields"] = json!([{"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": NOW, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
    let out = apply_as(Some(&live), cm(json!({"x": "2"})), "a", false).unwrap();
    assert_eq!(out["data"], json!({"x": "2"}));
    assert_eq!(owners(&out, &["f:data", "f:x"]), ["a/Apply"]);
}

#[test]
fn updates_take_the_fields_they_change() {
    let mut created = cm(json!({"x": "1", "y": "1"}));
    update(None, &mut created, &mgr("kubectl-create"), CM, NOW);
    assert_eq!(owners(&created, &["f:data", "f:x"]), ["kubectl-create/Update"]);
    // An apply of another value conflicts with the updater, named with its version.
    let err = apply_as(Some(&created), cm(json!({"x": "2"})), "a", false).unwrap_err();
    assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.x");
    // Another updater changing y takes y; x stays with the creator; a removed field goes.
    let mut edited = cm(json!({"x": "1", "y": "2"}));
    edited["metadata"]["managedFields"] = created["metadata"]["managedFields"].clone();
    update(Some(&created), &mut edited, &mgr("kubectl-edit"), CM, "2026-01-01T00:00:01Z");
    assert_eq!(owners(&edited, &["f:data", "f:y"]), ["kubectl-edit/Update"]);
    assert_eq!(owners(&edited, &["f:data", "f:x"]), ["kubectl-create/Update"]);
    let mut shrunk = cm(json!({"y": "2"}));
    update(Some(&edited), &mut shrunk, &mgr("kubectl-edit"), CM, NOW);
    assert!(owners(&shrunk, &["f:data", "f:x"]).is_empty());
    assert_eq!(shrunk["metadata"]["managedFields"].as_array().unwrap().len(), 1, "empty entries go");
    // managedFields: [{}] clears them.
    let mut reset = cm(json!({"y": "3"}));
    reset["metadata"]["managedFields"] = json!([{}]);
    update(Some(&shrunk), &mut reset, &mgr("x"), CM, NOW);
    assert!(reset["metadata"].get("managedFields").is_none());
}

#[test]
fn lists_merge_by_their_type() {
    let d = |containers: Value, finalizers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": finalizers},
               "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {"spec": {"containers": containers}}}})
    };
    let apply_d = |live: Option<&Value>, v: Value, who: &str| apply(live, &v, &mgr(who), false, DEPLOYMENT, NOW);
    let live = apply_d(None, d(json!([{"name": "a", "image": "1"}]), json!(["x"])), "one").unwrap();
    let both = apply_d(Some(&live), d(json!([{"name": "b", "image": "1"}]), json!(["y"])), "two").unwrap();
    let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"], "a map list keeps each applier's items");
    assert_eq!(both["metadata"]["finalizers"], json!(["x", "y"]), "a set keeps each applier's members");
    // The selector is atomic and the same: shared, no conflict.
    let mut who = owners(&both, &["f:spec", "f:selector"]);
    who.sort();
    assert_eq!(who, ["one/Apply", "two/Apply"]);
    // One applier leaves: its item and member go, the other's stay.
    let after = apply_d(Some(&both), d(json!([]), json!([])), "one").unwrap();
    assert_eq!(after["spec"]["template"]["spec"]["containers"], json!([{"name": "b", "image": "1"}]));
    assert_eq!(after["metadata"]["finalizers"], json!(["y"]));
    // A different image for another applier's item conflicts on that field alone.
    let err = apply_d(Some(&both), d(json!([{"name": "b", "image": "2"}]), json!([])), "one").unwrap_err();
    assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"two\": .spec.template.spec.containers[name=\"b\"].image");
}

#[test]
fn an_item_another_manager_changed_stays_whole_when_its_applier_drops_it() {
    let d = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {"spec": {"containers": containers}}}})
    };
    let live = apply(None, &d(json!([{"name": "app", "image": "1"}, {"name": "side", "image": "1"}])), &mgr("kubectl"), false, DEPLOYMENT, NOW).unwrap();
    // `kubectl set image` takes the side container's image.
    let mut set = live.clone();
    set["spec"]["template"]["spec"]["containers"][1]["image"] = json!("2");
    update(Some(&live), &mut set, &mgr("kubectl-set"), DEPLOYMENT, NOW);
    // It gains the image alone: a list item both objects have is not a field the update set.
    let side = ["f:spec", "f:template", "f:spec", "f:containers", "k:{\"name\":\"side\"}"];
    assert_eq!(owners(&set, &side), ["kubectl/Apply"]);
    assert_eq!(owners(&set, &[&side[..], &["f:image"]].concat()), ["kubectl-set/Update"]);
    // The applier drops the side container: it stays, with its name, as the other manager's.
    let after = apply(Some(&set), &d(json!([{"name": "app", "image": "1"}])), &mgr("kubectl"), false, DEPLOYMENT, NOW).unwrap();
    assert_eq!(after["spec"]["template"]["spec"]["containers"], json!([{"name": "app", "image": "1"}, {"name": "side", "image": "2"}]));
    // An item no one else has a field in goes whole.
    let gone = apply(Some(&live), &d(json!([{"name": "app", "image": "1"}])), &mgr("kubectl"), false, DEPLOYMENT, NOW).unwrap();
    assert_eq!(gone["spec"]["template"]["spec"]["containers"], json!([{"name": "app", "image": "1"}]));
}

#[test]
fn an_update_owns_the_maps_and_lists_it_adds_and_loses_those_removed() {
    let mut created = cm(json!({"x": "1"}));
    update(None, &mut created, &mgr("kubectl-create"), CM, NOW);
    // The first annotation brings the map: the annotator owns it too (`.`), as in Kubernetes.
    let mut annotated = created.clone();
    annotated["metadata"]["annotations"] = json!({"note": "a"});
    update(Some(&created), &mut annotated, &mgr("kubectl-annotate"), CM, NOW);
    let entry = annotated["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "kubectl-annotate").unwrap();
    assert_eq!(entry["fieldsV1"], json!({"f:metadata": {"f:annotations": {".": {}, "f:note": {}}}}));
    // Another annotation on the map that is there: that field alone.
    let mut more = annotated.clone();
    more["metadata"]["annotations"]["other"] = json!("b");
    update(Some(&annotated), &mut more, &mgr("kubectl-edit"), CM, NOW);
    let entry = more["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "kubectl-edit").unwrap();
    assert_eq!(entry["fieldsV1"], json!({"f:metadata": {"f:annotations": {"f:other": {}}}}));
    // The map removed: every manager loses it.
    let mut bare = more.clone();
    bare["metadata"].as_object_mut().unwrap().remove("annotations");
    update(Some(&more), &mut bare, &mgr("kubectl-edit"), CM, NOW);
    assert!(!bare["metadata"]["managedFields"].to_string().contains("annotations"), "{}", bare["metadata"]["managedFields"]);
}

#[test]
fn managers_come_from_the_field_manager_or_the_user_agent() {
    assert_eq!(Manager::of(Some("ctl"), Some("kubectl/v1.33"), "v1", None).name, "ctl");
    assert_eq!(Manager::of(None, Some("kubectl/v1.33.0 (linux/amd64)"), "v1", None).name, "kubectl");
    assert_eq!(Manager::of(None, Some(&"x".repeat(300)), "v1", None).name.len(), MAX_MANAGER_LEN);
}

#[test]
fn map_keys_left_out_take_their_defaults() {
    let d = |ports: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": ports}]}}}})
    };
    // The stored object has the port's protocol (defaulted); applying again without it names
    // the same item, and nothing is duplicated or conflicts.
    let live = apply(None, &d(json!([{"containerPort": 80}])), &mgr("a"), false, DEPLOYMENT, NOW).unwrap();
    let ports = &live["spec"]["template"]["spec"]["containers"][0]["ports"];
    assert_eq!(ports, &json!([{"containerPort": 80, "protocol": "TCP"}]));
    let again = apply(Some(&live), &d(json!([{"containerPort": 80, "name": "http"}])), &mgr("b"), false, DEPLOYMENT, NOW).unwrap();
    assert_eq!(again["spec"]["template"]["spec"]["containers"][0]["ports"], json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}]));
}

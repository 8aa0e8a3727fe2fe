"""The Python `kubernetes` client against a running server: typed CRUD, a strategic merge patch,
server-side apply (conflict, force, managedFields), a watch, the dynamic client over discovery,
and a refused request. Exits non-zero with the first failure.

Usage: client_check.py KUBECONFIG NAMESPACE
"""

import json
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")


def main(kubeconfig, ns):
    api_client = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api_client)

    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    created = core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py", labels={"app": "py"}), data={"a": "1"})
    )
    expect(created.metadata.uid, "create returns the stored object")
    got = core.read_namespaced_config_map("py", ns)
    expect(got.data == {"a": "1"}, f"get: {got.data}")
    patched = core.patch_namespaced_config_map("py", ns, {"data": {"b": "2"}})
    expect(patched.data == {"a": "1", "b": "2"}, f"strategic merge patch: {patched.data}")
    expect(int(patched.metadata.resource_version) > int(created.metadata.resource_version), "resourceVersion grows")
    listed = core.list_namespaced_config_map(ns, label_selector="app=py")
    expect([c.metadata.name for c in listed.items] == ["py"], "list with a label selector")

    # A watch from the list's revision sees the next change.
    w = watch.Watch()
    events = w.stream(core.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version, timeout_seconds=10)
    core.patch_namespaced_config_map("py", ns, {"data": {"c": "3"}})
    first = next(events)
    w.stop()
    expect(first["type"] == "MODIFIED" and first["object"].data.get("c") == "3", f"watch event: {first['type']}")

    # Server-side apply through the dynamic client (which finds the resource by discovery).
    dyn = DynamicClient(api_client)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": ns}, "data": {"k": "mine"}}
    applied = cms.server_side_apply(body=body, field_manager="py-one")
    managers = [(m.manager, m.operation) for m in applied.metadata.managedFields]
    expect(managers == [("py-one", "Apply")], f"managedFields after apply: {managers}")
    body["data"]["k"] = "theirs"
    try:
        cms.server_side_apply(body=body, field_manager="py-two")
        expect(False, "a second manager changing an owned field conflicts")
    except ConflictError as e:
        status = json.loads(e.body)
        causes = [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]
        expect(causes == [("FieldManagerConflict", ".data.k", 'conflict with "py-one"')], f"conflict names the owner: {status}")
    forced = cms.server_side_apply(body=body, field_manager="py-two", force_conflicts=True)
    expect(forced.data["k"] == "theirs", "force takes the field")
    expect([m.manager for m in forced.metadata.managedFields] == ["py-two"], "force moves ownership")

    # Refusals arrive as ApiException with the Status.
    try:
        core.read_namespaced_config_map("absent", ns)
        expect(False, "a missing object is 404")
    except ApiException as e:
        expect(e.status == 404 and json.loads(e.body)["reason"] == "NotFound", f"404 Status: {e.body}")

    core.delete_namespaced_config_map("py", ns)
    remaining = [c.metadata.name for c in core.list_namespaced_config_map(ns).items]
    expect("py" not in remaining, f"deleted: {remaining}")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

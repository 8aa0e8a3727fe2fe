#!/usr/bin/env python3
"""Writes `src/registry/kinds/go_types.json`: the shape of Kubernetes' internal types as Go's encoding/json
prints them in validation messages (a changed pod spec's diff, an immutable claim spec's value).

Kubernetes prints these values from its internal Go structs, which have no JSON tags: every
field appears under its Go name, in declaration order, with its zero value when unset. This
reads the struct declarations of a Kubernetes source tree and keeps, for each struct reachable
from the roots below, its fields in order: the name printed, the key of the served (v1) JSON the
value comes from, the field's type in a small grammar, and the JSON tag options where the struct
has tags (the apimachinery types). Usage:

    go-types.py KUBERNETES_SOURCE_TREE > src/registry/kinds/go_types.json

Type grammar: `string`, `int`, `bool`, `float`, `bytes`, `quantity`, `time`, `duration`,
`intorstr`, `raw` (a RawExtension), `*T` (pointer), `[]T` (slice), `map T` (string-keyed map),
`struct PKG.NAME`.
"""

import json
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."

# package -> (internal types files, served v1 types files)
PACKAGES = {
    "core": (["pkg/apis/core/types.go"], ["staging/src/k8s.io/api/core/v1/types.go"]),
    "batch": (["pkg/apis/batch/types.go"], ["staging/src/k8s.io/api/batch/v1/types.go"]),
    "resource": (["pkg/apis/resource/types.go"], ["staging/src/k8s.io/api/resource/v1/types.go"]),
    "storage": (["pkg/apis/storage/types.go"], ["staging/src/k8s.io/api/storage/v1/types.go"]),
    "networking": (["pkg/apis/networking/types.go"], ["staging/src/k8s.io/api/networking/v1/types.go"]),
    "apiextensions": (
        [f"staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/{f}" for f in ["types.go", "types_jsonschema.go"]],
        [f"staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/{f}" for f in ["types.go", "types_jsonschema.go"]],
    ),
    "metav1": (["staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go"], []),
}

# The structs whose values messages print, and what they reach.
ROOTS = [
    "apiextensions.CustomResourceDefinitionVersion",
    "core.PodSpec",
    "core.PodTemplateSpec",
    "core.PersistentVolumeClaimSpec",
    "core.PersistentVolumeSource",
    "resource.ResourceClaimSpec",
    "resource.ResourceClaimTemplateSpec",
    "networking.ParentReference",
    "storage.CSINodeDriver",
    "storage.VolumeAttachmentSpec",
]

# Types with a JSON form of their own.
SPECIAL = {
    "resource.Quantity": "quantity",
    "metav1.Time": "time",
    "metav1.MicroTime": "time",
    "metav1.Duration": "duration",
    "intstr.IntOrString": "intorstr",
    "runtime.RawExtension": "raw",
    "metav1.FieldsV1": "raw",
    "apiextensions.JSON": "raw",
    "types.UID": "string",
    "[]byte": "bytes",
}

BASIC = {
    "string": "string", "bool": "bool", "float64": "float", "float32": "float",
    "int": "int", "int32": "int", "int64": "int", "uint": "int", "uint32": "int",
    "uint64": "int", "uint16": "int", "int16": "int", "byte": "int",
}

# Fields the v1 -> internal conversion fills from elsewhere: the pod's host namespaces live in
# the pod spec's JSON but in the internal PodSecurityContext, which conversion always allocates.
FROM_PARENT = {("core.PodSecurityContext", f) for f in ["HostNetwork", "HostPID", "HostIPC", "ShareProcessNamespace", "HostUsers"]}
ALWAYS_SET = {("core.PodSpec", "SecurityContext")}


def read(path):
    with open(f"{ROOT}/{path}") as f:
        return f.read()


def declarations(src):
    """(structs, named): struct name -> [(name or None if embedded, type, tag)], named type -> type."""
    structs, named = {}, {}
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^type (\w+) struct\s*\{\s*\}\s*$", line)
        if m:
            structs[m.group(1)] = []
            i += 1
            continue
        m = re.match(r"^type (\w+) struct \{\s*$", line)
        if m:
            fields = []
            depth = 1
            i += 1
            while i < len(lines) and depth > 0:
                body = re.sub(r"//.*$", "", lines[i]).strip()
                i += 1
                if body.endswith("{"):
                    depth += 1
                    continue
                if body == "}":
                    depth -= 1
                    continue
                if not body or depth > 1:
                    continue
                tag = ""
                t = re.search(r"`(.*)`", body)
                if t:
                    tag = t.group(1)
                    body = body[: t.start()].strip()
                parts = body.split()
                if len(parts) == 1:
                    fields.append((None, parts[0], tag))
                else:
                    for name in parts[0].rstrip(",").split(","):
                        fields.append((name.strip(), " ".join(parts[1:]), tag))
            structs[m.group(1)] = fields
            continue
        m = re.match(r"^type (\w+) (\S.*?)\s*$", line)
        if m and not m.group(2).startswith(("struct", "interface", "func", "=")):
            named[m.group(1)] = m.group(2)
        i += 1
    return structs, named


def json_tag(tag):
    m = re.search(r'json:"([^"]*)"', tag)
    if not m:
        return None, set()
    parts = m.group(1).split(",")
    return parts[0], set(parts[1:])


def merged(paths):
    structs, named = {}, {}
    for path in paths:
        s, n = declarations(read(path))
        structs.update(s)
        named.update(n)
    return structs, named


INTERNAL, SERVED = {}, {}
for pkg, (internal, served) in PACKAGES.items():
    INTERNAL[pkg] = merged(internal)
    SERVED[pkg] = merged(served)[0]

ALIASES = {"api": "core", "core": "core", "metav1": "metav1", "v1": "core"}


def resolve(ty, pkg):
    """The grammar form of Go type `ty` written in package `pkg`, and the structs it names."""
    if ty in SPECIAL:
        return SPECIAL[ty], []
    if ty.startswith("*"):
        inner, found = resolve(ty[1:], pkg)
        return "*" + inner, found
    if ty.startswith("[]"):
        inner, found = resolve(ty[2:], pkg)
        return "[]" + inner, found
    if ty.startswith("map["):
        depth, j = 0, 3
        while True:
            depth += {"[": 1, "]": -1}.get(ty[j], 0)
            if depth == 0:
                break
            j += 1
        inner, found = resolve(ty[j + 1:], pkg)
        return "map " + inner, found
    if ty in BASIC:
        return BASIC[ty], []
    if f"{pkg}.{ty}" in SPECIAL:
        return SPECIAL[f"{pkg}.{ty}"], []
    if "." in ty:
        prefix, name = ty.split(".", 1)
        full = f"{prefix}.{name}"
        if full in SPECIAL:
            return SPECIAL[full], []
        pkg, ty = ALIASES.get(prefix, prefix), name
    structs, named = INTERNAL[pkg]
    if ty in structs:
        return f"struct {pkg}.{ty}", [f"{pkg}.{ty}"]
    if ty in named:
        return resolve(named[ty], pkg)
    raise SystemExit(f"unknown type {pkg}.{ty}")


def served_key(pkg, struct, field):
    for f in SERVED.get(pkg, {}).get(struct, []):
        if f[0] == field:
            key, _ = json_tag(f[2])
            if key:
                return key
    return field[0].lower() + field[1:]


def served_embedded_key(pkg, struct, ty):
    """The key under which the served type nests an embedded struct (`metadata`), if it does."""
    for f in SERVED.get(pkg, {}).get(struct, []):
        if f[0] is None and f[1] == ty:
            key, _ = json_tag(f[2])
            return key or None
    return None


out = {}
todo = list(ROOTS)
while todo:
    full = todo.pop()
    if full in out:
        continue
    pkg, name = full.split(".")
    fields = []
    for field, ty, tag in INTERNAL[pkg][0][name]:
        form, found = resolve(ty, pkg)
        todo.extend(found)
        key, options = json_tag(tag)
        if (full, field) in ALWAYS_SET:
            form = form.lstrip("*")
        if field is None:
            entry = {"embedded": form}
            nested = served_embedded_key(pkg, name, ty)
            if nested:
                entry["key"] = nested
        elif key == "-":
            continue
        elif key is not None or pkg == "metav1":
            # A tagged struct prints the JSON key and honours omitempty and omitzero.
            entry = {"name": key or field, "key": key or field, "type": form}
            omit = sorted(options & {"omitempty", "omitzero"})
            if omit:
                entry["omit"] = omit
        else:
            entry = {"name": field, "key": served_key(pkg, name, field), "type": form}
            if (full, field) in FROM_PARENT:
                entry["parent"] = True
        fields.append(entry)
    out[full] = fields

json.dump(dict(sorted(out.items())), sys.stdout, indent=1)
print()

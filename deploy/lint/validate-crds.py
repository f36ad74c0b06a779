"""Validates rendered manifests of custom kinds (KEDA's ScaledObject, TriggerAuthentication)
against the openAPIV3Schema of their CustomResourceDefinitions, strictly (no unknown field).

usage: validate-crds.py <directory of CRD YAML files> <manifest.yaml>...
Exits 1 when a document of a kind the CRDs define does not validate, or a custom kind has no CRD.
Run by deploy/lint.sh with the venv of deploy/lint/requirements.txt (PyYAML, jsonschema)."""
import pathlib
import sys

import jsonschema
import yaml

BUILTIN_GROUPS = {"", "apps", "batch", "policy", "autoscaling", "networking.k8s.io"}


def strict(schema):
    """Unknown fields rejected, as kubectl's field validation does (the API server would drop them)."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def schemas(crd_dir):
    found = {}
    for path in sorted(pathlib.Path(crd_dir).glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                schema = strict(version["schema"]["openAPIV3Schema"])
                found[(f"{group}/{version['name']}", kind)] = schema
    return found


def main():
    crds = schemas(sys.argv[1])
    failures = checked = 0
    for manifest in sys.argv[2:]:
        for doc in yaml.safe_load_all(pathlib.Path(manifest).read_text()):
            if not doc:
                continue
            key = (doc.get("apiVersion", ""), doc.get("kind", ""))
            group = key[0].rsplit("/", 1)[0] if "/" in key[0] else ""
            if group in BUILTIN_GROUPS:
                continue
            name = f"{manifest}: {key[1]} {doc.get('metadata', {}).get('name')}"
            if key not in crds:
                print(f"FAIL {name}: no CRD for {key[0]} {key[1]}")
                failures += 1
                continue
            errors = sorted(jsonschema.Draft7Validator(crds[key]).iter_errors(doc), key=lambda e: list(e.path))
            checked += 1
            for error in errors:
                print(f"FAIL {name}: {'.'.join(map(str, error.path)) or '(root)'}: {error.message}")
            failures += len(errors)
            if not errors:
                print(f"ok   {name}")
    print(f"{checked} custom resources checked, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

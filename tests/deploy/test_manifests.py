"""The Kubernetes base (`deploy/kubernetes/base`) renders with kubectl's kustomize, and
every object in it is valid: the built-in kinds against Kubernetes' own schemas
(kubernetes-validate, strict: no unknown field passes), KEDA's against the OpenAPI schemas
of KEDA's CRDs (vendored in tests/deploy/keda/). The workers' scalers watch real queues."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from bridge.queue.celery_queue import QUEUES
from tests.deploy.service_images import ROOT

BASE = ROOT / "deploy" / "kubernetes" / "base"
KEDA = Path(__file__).parent / "keda"
KUBERNETES = "1.32"


def rendered() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "the manifest test renders with kubectl's kustomize: install kubectl"
    done = subprocess.run(
        [kubectl, "kustomize", str(BASE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def keda_schemas() -> dict[str, dict[str, Any]]:
    """Each KEDA kind to the OpenAPI v3 schema of its served version."""
    schemas = {}
    for path in KEDA.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        [version] = [v for v in crd["spec"]["versions"] if v["served"]]
        schemas[crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return schemas


def test_every_rendered_object_is_valid_against_kubernetes_and_keda_schemas() -> None:
    objects = rendered()
    keda = keda_schemas()
    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("Deployment") == 3 and "StatefulSet" in kinds
    assert kinds.count("ScaledObject") == 2 and "TriggerAuthentication" in kinds
    for each in objects:
        where = f"{each['kind']} {each['metadata']['name']}"
        if each["apiVersion"].startswith("keda.sh/"):
            jsonschema.validate(each, keda[each["kind"]])
        else:
            try:
                kubernetes_validate.validate(each, KUBERNETES, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")


def test_both_checks_catch_a_wrong_field() -> None:
    """The checks can fail: a misspelled container field, a replica count as text."""
    objects = rendered()
    [deployment] = [o for o in objects if o["kind"] == "Deployment"][:1]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError, match="imagePullPolcy"):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)
    [scaled] = [o for o in objects if o["kind"] == "ScaledObject"][:1]
    scaled["spec"]["minReplicaCount"] = "zero"
    with pytest.raises(jsonschema.ValidationError, match="zero"):
        jsonschema.validate(scaled, keda_schemas()["ScaledObject"])


def test_scalers_watch_the_queues_their_workers_serve_and_scale_to_zero() -> None:
    objects = rendered()
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    for scaled in (o for o in objects if o["kind"] == "ScaledObject"):
        target = deployments[scaled["spec"]["scaleTargetRef"]["name"]]
        [container] = target["spec"]["template"]["spec"]["containers"]
        served = container["args"][container["args"].index("--queues") + 1].split(",")
        lists = [t["metadata"]["listName"] for t in scaled["spec"]["triggers"]]
        assert sorted(lists) == sorted(served) and set(lists) <= set(QUEUES)
        assert scaled["spec"]["minReplicaCount"] == 0


def test_no_secret_value_is_in_the_manifests() -> None:
    """Secrets are made by the operator and mounted as files; the manifests only name them."""
    objects = rendered()
    assert not [o for o in objects if o["kind"] == "Secret"]
    for each in objects:
        for container in (
            each.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        ):
            for variable in container.get("env", []):
                assert "valueFrom" not in variable, variable
                assert not variable["name"].endswith(("PASSWORD", "API_KEY")), variable

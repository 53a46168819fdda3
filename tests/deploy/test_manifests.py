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

from evalrelay.bridge.contract.names import QUEUES
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


RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip
"""The volume types Pod Security's `restricted` profile allows."""


def pod_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod the objects make, by its owner's kind and name."""
    return {
        f"{o['kind']} {o['metadata']['name']}": o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")
    }


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What keeps a pod from Pod Security's `restricted` profile (Kubernetes 1.32: the
    baseline controls and the restricted ones), and from a read-only root and no
    service-account token, which this project adds."""
    found = []
    context = pod.get("securityContext", {})
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            found.append(f"{flag} is set")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']} is {sorted(kinds)}")
    if pod.get("automountServiceAccountToken") is not False:
        found.append("automountServiceAccountToken is not false")
    if context.get("sysctls"):
        found.append("sysctls are set")
    for container in pod.get("initContainers", []) + pod["containers"]:
        name = f"container {container['name']}"
        own = container.get("securityContext", {})
        if own.get("privileged"):
            found.append(f"{name}: privileged")
        if own.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation is not false")
        caps = own.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            found.append(f"{name}: capabilities.drop lacks ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: capabilities.add {caps['add']}")
        if not own.get("runAsNonRoot", context.get("runAsNonRoot")):
            found.append(f"{name}: runAsNonRoot is not true")
        if own.get("runAsUser", context.get("runAsUser")) == 0:
            found.append(f"{name}: runs as uid 0")
        seccomp = own.get("seccompProfile", context.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile is {seccomp}")
        if own.get("readOnlyRootFilesystem") is not True:
            found.append(f"{name}: readOnlyRootFilesystem is not true")
        if any(port.get("hostPort") for port in container.get("ports", [])):
            found.append(f"{name}: a hostPort")
        if own.get("procMount", "Default") != "Default":
            found.append(f"{name}: procMount {own['procMount']}")
    return found


def test_every_pod_passes_pod_security_restricted_field_by_field() -> None:
    pods = pod_templates(rendered())
    assert len(pods) == 4, sorted(pods)
    wrong = {owner: why for owner, pod in pods.items() if (why := restricted_violations(pod))}
    assert not wrong, wrong


def test_the_restricted_check_catches_each_field() -> None:
    """The check can fail: each field taken away from a pod that passes is named."""
    [(_, pod)] = [(k, v) for k, v in pod_templates(rendered()).items() if "api-worker" in k]
    assert restricted_violations(pod) == []
    container = pod["containers"][0]["securityContext"]
    broken = [
        (container, "allowPrivilegeEscalation", True, "allowPrivilegeEscalation is not false"),
        (container, "capabilities", {"drop": ["NET_RAW"]}, "capabilities.drop lacks ALL"),
        (container, "readOnlyRootFilesystem", False, "readOnlyRootFilesystem is not true"),
        (container, "runAsUser", 0, "runs as uid 0"),
        (pod["securityContext"], "seccompProfile", {"type": "Unconfined"}, "is Unconfined"),
        (pod["securityContext"], "runAsNonRoot", False, "runAsNonRoot is not true"),
        (pod, "automountServiceAccountToken", True, "automountServiceAccountToken"),
        (pod, "hostNetwork", True, "hostNetwork is set"),
    ]
    for where, key, value, said in broken:
        was = where.get(key)
        where[key] = value
        assert any(said in v for v in restricted_violations(pod)), (key, value)
        if was is None:
            del where[key]
        else:
            where[key] = was
    pod["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    assert "volume host is ['hostPath']" in restricted_violations(pod)


def test_network_policies_let_only_evalrelay_reach_redis_and_serve() -> None:
    objects = rendered()
    policies = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "NetworkPolicy"}
    names = {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet")
    }
    redis = policies["evalrelay-redis"]
    own = names["evalrelay-redis"]
    assert redis["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": own}
    [rule] = redis["ingress"]
    [in_cluster, keda] = rule["from"]
    [allowed] = in_cluster["podSelector"]["matchExpressions"]
    assert "namespaceSelector" not in in_cluster  # this namespace's pods only
    assert sorted(allowed["values"]) == sorted(
        names[n] for n in ("evalrelay-api-worker", "evalrelay-agent-worker", "evalrelay-files")
    )
    assert keda["podSelector"]["matchLabels"] == {"app": "keda-operator"}
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]
    serve = policies["evalrelay-files"]
    [rule] = serve["ingress"]
    [named] = rule["from"]
    assert named["podSelector"]["matchLabels"] == {"evalrelay.dev/serve-client": "true"}
    assert rule["ports"] == [{"protocol": "TCP", "port": 8431}]
    workers = policies["evalrelay-workers"]
    assert workers["policyTypes"] == ["Ingress"] and not workers.get("ingress")
    # Every pod is under a policy that limits who reaches it.
    covered = set()
    for spec in policies.values():
        selector = spec["podSelector"]
        covered |= {selector.get("matchLabels", {}).get("app.kubernetes.io/name")}
        for expression in selector.get("matchExpressions", []):
            covered |= set(expression["values"])
    assert set(names.values()) <= covered

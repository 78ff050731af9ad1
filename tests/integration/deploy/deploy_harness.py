"""What the deploy tests share: the manifests of ``deploy/``, the image's entrypoint read from the
``Dockerfile``, a ``ksched run`` started exactly as the Deployment starts it, and a recorder of the
API calls the embedded cluster receives.

Nothing here restates a manifest or the Dockerfile: the command line, the environment, the mounted
configuration and the probe paths are all read from them, so the tests follow those files as they
change.

How a container is stood in for, without a container engine:

- The image's ``ENTRYPOINT``/``CMD`` and the container's ``command``/``args`` combine as kubelet
  combines them, and ``$(VAR)`` references expand from the container's ``env`` as kubelet expands
  them (``status.podIP`` is the replica's stand-in pod IP, a distinct loopback address).
- ``ksched`` (the console script, ``ksched.cli:main``) runs as ``python -m ksched``, the same
  function, so the code under test is this tree's.
- Each volume mount becomes a temporary directory (a ConfigMap's files written into it) and every
  mount path in the arguments and the environment is rewritten to it. That is the only rewrite.
- In the pod, ksched connects with the service account (in-cluster configuration); here it is given
  ``KUBECONFIG``. ``ksched.kube.connection.load_connection`` tries ``--kubeconfig``, ``KUBECONFIG``,
  then the service account, so with no ``--kubeconfig`` in the arguments (checked) the only
  difference is where the server address and credentials come from.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import tomllib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.integration.support import http_get

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
"""The second-scheduler setup that ``kubectl apply -k deploy/`` applies; the Deployment lives here."""
REPLACE_DEFAULT = DEPLOY / "replace-default"
DELEGATED_AUTH = DEPLOY / "delegated-auth"
"""The kube-system RoleBinding of the secure port's delegated authentication (outside base/)."""
DOCKERFILE = ROOT / "Dockerfile"
SERVICE_ACCOUNT = ("ksched", "ksched")
"""(namespace, name) of the account the Deployment runs as; checked against the manifests."""


# ---------------------------------------------------------------------------------------------- manifests
def kustomization(root: Path = BASE) -> dict[str, Any]:
    return dict(yaml.safe_load((root / "kustomization.yaml").read_text()))


def manifest_files(root: Path = BASE) -> list[Path]:
    """The resource files a kustomization lists, in its order (not other kustomizations)."""
    return [root / name for name in kustomization(root)["resources"] if (root / name).is_file()]


def manifests(root: Path = BASE) -> list[tuple[Path, dict[str, Any]]]:
    """Every object of every resource file, with its file."""
    out = []
    for path in manifest_files(root):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                out.append((path, doc))
    return out


def generated_configmaps(root: Path = BASE) -> dict[str, dict[str, Any]]:
    """The ConfigMaps a kustomization's ``configMapGenerator`` makes, by name (unhashed)."""
    k = kustomization(root)
    out: dict[str, dict[str, Any]] = {}
    for gen in k.get("configMapGenerator") or ():
        data = {}
        for entry in gen.get("files") or ():
            key, _, file = entry.partition("=") if "=" in entry else (Path(entry).name, "", entry)
            data[key] = (root / file).read_text()
        out[gen["name"]] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": gen["name"],
                "namespace": gen.get("namespace") or k.get("namespace", "default"),
            },
            "data": data,
        }
    return out


def objects(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in manifests() if doc.get("kind") == kind]


def the(kind: str) -> dict[str, Any]:
    found = objects(kind)
    assert len(found) == 1, f"expected one {kind} in deploy/, found {len(found)}"
    return found[0]


def ksched_container() -> dict[str, Any]:
    containers = the("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "the Deployment should run one container"
    return dict(containers[0])


def config_text() -> str:
    """The KubeSchedulerConfiguration the Deployment mounts (the file behind ``--config``)."""
    files = mounted_files()
    config = next(a.split("=", 1)[1] for a in container_argv("0.0.0.0") if a.startswith("--config="))
    assert config in files, f"--config={config} is not a file of a mounted ConfigMap ({sorted(files)})"
    return files[config]


def mounted_files() -> dict[str, str]:
    """Path in the container -> text, for every ConfigMap key the Deployment mounts."""
    spec = the("Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes") or ()}
    maps = generated_configmaps() | {d["metadata"]["name"]: d for d in objects("ConfigMap")}
    out = {}
    for mount in ksched_container().get("volumeMounts") or ():
        cm = volumes[mount["name"]].get("configMap")
        if cm is None:
            continue
        for key, text in (maps[cm["name"]].get("data") or {}).items():
            out[f"{mount['mountPath'].rstrip('/')}/{key}"] = text
    return out


# ---------------------------------------------------------------------------------------------- image
def dockerfile_final_stage() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile's last stage, continuation lines joined."""
    lines: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    stages: list[list[tuple[str, str]]] = []
    for line in lines:
        instr, _, args = line.partition(" ")
        if instr.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instr.upper(), args.strip()))
    assert stages, "the Dockerfile has no FROM"
    return stages[-1]


def _exec_form(args: str, instr: str) -> list[str]:
    value = yaml.safe_load(args)  # a JSON array is YAML too
    assert isinstance(value, list), f"{instr} must use the exec (JSON array) form, got {args!r}"
    return [str(v) for v in value]


def image_entrypoint() -> tuple[list[str], list[str]]:
    """(ENTRYPOINT, CMD) of the runtime image; an absent one is ``[]``."""
    entrypoint: list[str] = []
    cmd: list[str] = []
    for instr, args in dockerfile_final_stage():
        if instr == "ENTRYPOINT":
            entrypoint, cmd = _exec_form(args, instr), []  # a new ENTRYPOINT resets CMD
        elif instr == "CMD":
            cmd = _exec_form(args, instr)
    return entrypoint, cmd


def image_env() -> dict[str, str]:
    """The runtime stage's ``ENV`` (``KEY=value`` pairs)."""
    env: dict[str, str] = {}
    for instr, args in dockerfile_final_stage():
        if instr == "ENV":
            for word in shlex.split(args):
                key, sep, value = word.partition("=")
                assert sep, f"ENV {args!r}: use the KEY=value form"
                env[key] = value
    return env


# ---------------------------------------------------------------------------------------------- kubelet
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    """kubelet's ``$(VAR)`` expansion: defined names are replaced, ``$$`` is a literal ``$``, and an
    undefined reference is left as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _VAR.sub(sub, text)


def container_env(pod_ip: str) -> dict[str, str]:
    """The container's ``env`` as kubelet resolves it for a pod with this IP."""
    field_values = {
        "status.podIP": pod_ip,
        "metadata.namespace": the("Deployment")["metadata"]["namespace"],
        "metadata.name": f"ksched-{pod_ip.replace('.', '-')}",
        "spec.serviceAccountName": the("Deployment")["spec"]["template"]["spec"]["serviceAccountName"],
    }
    env: dict[str, str] = {}
    for var in ksched_container().get("env") or ():
        if "value" in var:
            env[var["name"]] = expand(str(var["value"]), env)
        else:
            path = var["valueFrom"]["fieldRef"]["fieldPath"]
            assert path in field_values, f"env {var['name']}: fieldRef {path} has no stand-in here"
            env[var["name"]] = field_values[path]
    return env


def container_argv(pod_ip: str) -> list[str]:
    """The process's argv as kubelet starts it: image ENTRYPOINT/CMD and container command/args."""
    c = ksched_container()
    entrypoint, cmd = image_entrypoint()
    if c.get("command"):
        argv = list(c["command"]) + list(c.get("args") or [])
    else:
        argv = entrypoint + (list(c["args"]) if c.get("args") is not None else cmd)
    env = container_env(pod_ip)
    return [expand(str(a), env) for a in argv]


def probe(kind: str) -> tuple[str, int]:
    """(path, port) of the container's ``livenessProbe`` / ``readinessProbe``."""
    c = ksched_container()
    get = c[kind]["httpGet"]
    port = get["port"]
    if isinstance(port, str):
        port = next(p["containerPort"] for p in c.get("ports") or () if p.get("name") == port)
    return str(get["path"]), int(port)


# ---------------------------------------------------------------------------------------------- a replica
def console_script() -> str:
    """The ``ksched`` console script's target (``module:function``), from pyproject.toml."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return str(meta["project"]["scripts"]["ksched"])


class Replica:
    """One pod of the Deployment as a local process; see the module docstring. Call :meth:`close`."""

    def __init__(self, name: str, pod_ip: str, kubeconfig: Path, tmp: Path) -> None:
        self.name = name
        self.pod_ip = pod_ip
        root = tmp / name
        root.mkdir(parents=True)
        mounts = self._mounts(root)
        argv = container_argv(pod_ip)
        assert argv[0] == "ksched", f"the container runs {argv[0]!r}, expected the ksched console script"
        assert not any(a.startswith("--kubeconfig") for a in argv), (
            "the Deployment must use in-cluster config"
        )
        assert console_script() == "ksched.cli:main"
        self.argv = [sys.executable, "-m", "ksched", *[_remap(a, mounts) for a in argv[1:]]]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
        env.update({k: _remap(v, mounts) for k, v in (image_env() | container_env(pod_ip)).items()})
        env["KUBECONFIG"] = str(kubeconfig)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
        self.log_path = root / "stderr.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=env, cwd=root
        )

    @staticmethod
    def _mounts(root: Path) -> dict[str, Path]:
        """Mount path in the container -> a local directory holding what the volume would."""
        spec = the("Deployment")["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes") or ()}
        files = mounted_files()
        out: dict[str, Path] = {}
        for i, mount in enumerate(ksched_container().get("volumeMounts") or ()):
            local = root / f"mount{i}-{mount['name']}"
            local.mkdir()
            mount_path = mount["mountPath"].rstrip("/")
            if "configMap" in volumes[mount["name"]]:
                for path, text in files.items():
                    if path.startswith(mount_path + "/"):
                        (local / path[len(mount_path) + 1 :]).write_text(text)
            out[mount_path] = local
        return out

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str, port: int) -> tuple[int, str]:
        """(status, body) of GET https://pod_ip:port/path as kubelet probes it (the serving
        certificate is not verified); (0, error) when nothing answers."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            return http_get(f"https://{self.pod_ip}:{port}{path}", context=context)
        except OSError as exc:
            return 0, str(exc)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM (what kubelet sends first) and wait for the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


def _remap(value: str, mounts: dict[str, Path]) -> str:
    """Rewrite a mount path (at the start of the value or after ``=``) to its local directory."""
    for mount_path, local in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        for prefix in ("", "="):
            needle = prefix + mount_path
            idx = value.find(needle)
            if idx < 0 or (prefix == "" and idx != 0):
                continue
            end = idx + len(needle)
            if end == len(value) or value[end] == "/":
                return value[: idx + len(prefix)] + str(local) + value[end:]
    return value


# ---------------------------------------------------------------------------------------------- API calls
@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request as the API server's authorizer sees it (RBAC's attributes)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    """Set for non-resource requests (``/version``, discovery) only."""

    @property
    def rule_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def parse_request(method: str, path: str, query: dict[str, str]) -> ApiCall:
    """Request attributes from a method and path, as kube-apiserver's request-info resolver derives
    them (resource requests under ``/api/v1`` and ``/apis/GROUP/VERSION``; anything else is a
    non-resource request)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:
        return ApiCall(verb=method.lower(), group="", resource="", path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if name:
        verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "POST": "create"}[method]
    elif method == "GET":
        verb = "watch" if query.get("watch") in ("true", "1") else "list"
    else:
        verb = {"POST": "create", "DELETE": "deletecollection"}[method]
    return ApiCall(verb, group, resource, sub, namespace, name)


class RequestLog:
    """Records every request a SimCluster's API server receives: wrap ``cluster.api.dispatch``
    before ``cluster.start()`` (:meth:`attach`)."""

    def __init__(self) -> None:
        self.calls: list[ApiCall] = []

    def attach(self, cluster: Any) -> None:
        inner: Callable[[Any], Awaitable[Any]] = cluster.api.dispatch

        async def dispatch(request: Any) -> Any:
            self.calls.append(parse_request(request.method, request.path, dict(request.query)))
            return await inner(request)

        cluster.api.dispatch = dispatch

    def resource_calls(self) -> set[ApiCall]:
        return {c for c in self.calls if not c.path}


# ---------------------------------------------------------------------------------------------- RBAC
@dataclass(frozen=True, slots=True)
class Grant:
    """One (verb, group, resource) a rule grants, where, and on which names (empty: any)."""

    verb: str
    group: str
    resource: str
    namespace: str
    """'' for a ClusterRole bound cluster-wide."""
    names: tuple[str, ...]
    origin: str


BUILTIN_ROLES: dict[tuple[str, str, str], dict[str, Any]] = {
    ("ClusterRole", "", "system:auth-delegator"): {
        "kind": "ClusterRole",
        "rules": [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["subjectaccessreviews"],
                "verbs": ["create"],
            },
        ],
    },
    ("Role", "kube-system", "extension-apiserver-authentication-reader"): {
        "kind": "Role",
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": ["extension-apiserver-authentication"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    },
}
"""The bootstrap roles kube-apiserver creates that the manifests bind (their v1.35 rules)."""


def grants(subject: tuple[str, str] = SERVICE_ACCOUNT) -> list[Grant]:
    """Every permission the manifests give the service account, expanded rule by rule."""
    roles = dict(BUILTIN_ROLES)
    roles |= {("ClusterRole", "", d["metadata"]["name"]): d for d in objects("ClusterRole")}
    roles |= {("Role", d["metadata"]["namespace"], d["metadata"]["name"]): d for d in objects("Role")}
    extra = [d for _, d in manifests(DELEGATED_AUTH)]
    out: list[Grant] = []
    for binding in objects("ClusterRoleBinding") + objects("RoleBinding") + extra:
        subjects = {
            (s.get("namespace", ""), s["name"]) for s in binding["subjects"] if s["kind"] == "ServiceAccount"
        }
        if subject not in subjects:
            continue
        ns = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        ref = binding["roleRef"]
        role = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
        for i, rule in enumerate(role.get("rules") or ()):
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.append(
                            Grant(
                                verb,
                                group,
                                resource,
                                ns,
                                tuple(rule.get("resourceNames") or ()),
                                f"{role['kind']} {ref['name']} rules[{i}]",
                            )
                        )
    return out


def allows(g: Grant, call: ApiCall) -> bool:
    """Whether this grant authorizes the call (RBAC's matching, without wildcards: none are used)."""
    if (g.verb, g.group, g.resource) != (call.verb, call.group, call.rule_resource):
        return False
    if g.namespace and g.namespace != call.namespace:
        return False
    return not g.names or call.name in g.names

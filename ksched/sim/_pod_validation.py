"""Pod validation as kube-apiserver v1.35's ValidatePodCreate, ValidatePodUpdate, ValidatePodStatusUpdate.

Checked: containers and init containers (names, images, ports, env names, resources), the enums
(restartPolicy, dnsPolicy, preemptionPolicy), nodeSelector, tolerations, affinity, topology spread
constraints, scheduling gates, overhead, volumes, activeDeadlineSeconds, nodeName, schedulerName,
and on update upstream's short list of mutable spec fields. A ``binding`` write sets
``spec.nodeName`` without any pod rule, as upstream's binding storage does.

Not checked (no scheduler can observe them): probes, lifecycle hooks, security contexts, volume
mounts, the volume sources' own fields, DNS config, host aliases, ephemeral containers, resource
claims. Values are read as the JSON decoder would place them: a part of the wrong type is a
:class:`~ksched.sim._storage_validation.DecodeError` (400), never a crash.

Cost: a write whose ``spec`` is the very dict of the stored pod (status writes, the sim's own
controllers) skips every spec rule; a pod create runs each rule once over its containers.
"""

from __future__ import annotations

from typing import Any

from ksched.model.labels import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    port_name_errors,
    port_num_errors,
    qualified_name_errors,
    relaxed_env_var_name_errors,
)
from ksched.sim._meta_validation import cached_dns1123_label_errors, validate_labels
from ksched.sim._pod_scheduling_validation import validate_scheduling
from ksched.sim._pod_update import validate_spec_update
from ksched.sim._resource_validation import validate_requirements, validate_resource_list
from ksched.sim._storage_validation import DecodeError, Errors, check_claim_spec, mapping, text

Obj = dict[str, Any]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
PROTOCOLS = ("SCTP", "TCP", "UDP")
INT32_MAX = 2**31 - 1
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
    "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
    "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
    "image",
)  # fmt: skip
"""Every ``VolumeSource`` member; a volume sets at most one (none is defaulted to emptyDir)."""


def validate_pod(errs: Errors, pod: Obj, old: Obj | None, subresource: str) -> None:
    """The Pod kind's rules for one write (``subresource`` "", "status" or "binding")."""
    if subresource == "binding":
        return
    spec = mapping(pod.get("spec"), "spec")
    if subresource == "status":
        if old is not None:
            _validate_status_update(errs, pod, old)
        return
    old_spec = None if old is None else old.get("spec")
    if spec is not old_spec:
        validate_pod_spec(errs, spec, "spec")
    if old is not None and spec is not old_spec:
        validate_spec_update(errs, spec, mapping(old_spec, "spec"))


def validate_pod_spec(errs: Errors, spec: Obj, at: str) -> None:
    """``ValidatePodSpec``: what a pod (or a pod template) must satisfy on every write."""
    _validate_volumes(errs, spec.get("volumes"), f"{at}.volumes")
    names: set[str] = set()
    containers = _list(spec.get("containers"), f"{at}.containers")
    if not containers:
        errs.required(f"{at}.containers")
    for i, raw in enumerate(containers):
        _validate_container(errs, raw, f"{at}.containers[{i}]", names, init=False)
    init = _list(spec.get("initContainers"), f"{at}.initContainers")
    for i, raw in enumerate(init):
        _validate_container(errs, raw, f"{at}.initContainers[{i}]", names, init=True)
    policy = text(spec.get("restartPolicy"), f"{at}.restartPolicy")
    if "restartPolicy" in spec and policy not in RESTART_POLICIES:
        if policy:
            errs.not_supported(f"{at}.restartPolicy", policy, RESTART_POLICIES)
        else:
            errs.required(f"{at}.restartPolicy")
    dns = text(spec.get("dnsPolicy"), f"{at}.dnsPolicy")
    if "dnsPolicy" in spec and dns not in DNS_POLICIES:
        if dns:
            errs.not_supported(f"{at}.dnsPolicy", dns, DNS_POLICIES)
        else:
            errs.required(f"{at}.dnsPolicy")
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in PREEMPTION_POLICIES:
        errs.not_supported(f"{at}.preemptionPolicy", preemption, PREEMPTION_POLICIES)
    _validate_names(errs, spec, at)
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= INT32_MAX:
        errs.invalid(f"{at}.activeDeadlineSeconds", deadline, f"must be between 1 and {INT32_MAX}, inclusive")
    if spec.get("nodeSelector"):
        validate_labels(errs, spec["nodeSelector"], f"{at}.nodeSelector")
    validate_scheduling(errs, spec, at)
    if spec.get("overhead"):
        validate_resource_list(errs, spec["overhead"], f"{at}.overhead", containers=False)


def _validate_names(errs: Errors, spec: Obj, at: str) -> None:
    """nodeName, schedulerName, hostname, subdomain and serviceAccountName, where set."""
    for key, check in (
        ("nodeName", dns1123_subdomain_errors),
        ("schedulerName", dns1123_subdomain_errors),
        ("serviceAccountName", dns1123_subdomain_errors),
        ("hostname", dns1123_label_errors),
        ("subdomain", dns1123_label_errors),
    ):
        value = spec.get(key)
        if value:
            value = text(value, f"{at}.{key}")
            for msg in check(value):
                errs.invalid(f"{at}.{key}", value, msg)


def _validate_container(errs: Errors, raw: Any, at: str, names: set[str], *, init: bool) -> None:
    """One container: name (a unique DNS-1123 label), image, ports, env names, resources."""
    ctr = mapping(raw, at)
    name = text(ctr.get("name"), f"{at}.name")
    if not name:
        errs.required(f"{at}.name")
    else:
        for msg in cached_dns1123_label_errors(name):
            errs.invalid(f"{at}.name", name, msg)
        if name in names:
            errs.duplicate(f"{at}.name", name)
        names.add(name)
    image = text(ctr.get("image"), f"{at}.image")
    if not image:
        errs.required(f"{at}.image")
    elif image != image.strip():
        errs.invalid(f"{at}.image", image, "must not have leading or trailing whitespace")
    if ctr.get("ports"):
        _validate_ports(errs, ctr["ports"], f"{at}.ports")
    if ctr.get("env"):
        _validate_env(errs, ctr["env"], f"{at}.env")
    resources = ctr.get("resources")
    if resources:
        validate_requirements(errs, mapping(resources, f"{at}.resources"), f"{at}.resources")
    policy = ctr.get("restartPolicy")
    if policy is not None:
        if not init:
            errs.forbidden(f"{at}.restartPolicy", "may not be set for non-init containers")
        elif policy != "Always":
            errs.not_supported(f"{at}.restartPolicy", policy, ("Always",))


def _validate_ports(errs: Errors, ports: Any, at: str) -> None:
    """``validateContainerPorts``: names, 1..65535 container and host ports, a known protocol."""
    seen: set[str] = set()
    for i, raw in enumerate(_list(ports, at)):
        here = f"{at}[{i}]"
        port = mapping(raw, here)
        name = text(port.get("name"), f"{here}.name")
        if name:
            msgs = port_name_errors(name)
            for msg in msgs:
                errs.invalid(f"{here}.name", name, msg)
            if not msgs and name in seen:
                errs.duplicate(f"{here}.name", name)
            seen.add(name)
        container_port = port.get("containerPort")
        if not container_port:
            errs.required(f"{here}.containerPort")
        else:
            for msg in port_num_errors(container_port):
                errs.invalid(f"{here}.containerPort", container_port, msg)
        host_port = port.get("hostPort")
        if host_port:
            for msg in port_num_errors(host_port):
                errs.invalid(f"{here}.hostPort", host_port, msg)
        protocol = port.get("protocol", "TCP")
        if not protocol:
            errs.required(f"{here}.protocol")
        elif protocol not in PROTOCOLS:
            errs.not_supported(f"{here}.protocol", protocol, PROTOCOLS)


def _validate_env(errs: Errors, env: Any, at: str) -> None:
    for i, raw in enumerate(_list(env, at)):
        var = mapping(raw, f"{at}[{i}]")
        name = text(var.get("name"), f"{at}[{i}].name")
        if not name:
            errs.required(f"{at}[{i}].name")
        else:
            for msg in relaxed_env_var_name_errors(name):
                errs.invalid(f"{at}[{i}].name", name, msg)


def _validate_volumes(errs: Errors, volumes: Any, at: str) -> None:
    """``ValidateVolumes``: unique DNS-1123 label names, at most one source, the sources scheduling reads."""
    names: set[str] = set()
    for i, raw in enumerate(_list(volumes, at)):
        here = f"{at}[{i}]"
        vol = mapping(raw, here)
        sources = [k for k in VOLUME_SOURCES if vol.get(k) is not None]
        for extra in sources[1:]:
            errs.forbidden(f"{here}.{extra}", "may not specify more than 1 volume type")
        if "persistentVolumeClaim" in sources:
            claim = mapping(vol["persistentVolumeClaim"], f"{here}.persistentVolumeClaim")
            if not text(claim.get("claimName"), f"{here}.persistentVolumeClaim.claimName"):
                errs.required(f"{here}.persistentVolumeClaim.claimName")
        if "ephemeral" in sources:
            _validate_ephemeral(errs, vol["ephemeral"], f"{here}.ephemeral")
        name = text(vol.get("name"), f"{here}.name")
        if not name:
            errs.required(f"{here}.name")
        else:
            for msg in dns1123_label_errors(name):
                errs.invalid(f"{here}.name", name, msg)
        if name in names:
            errs.duplicate(f"{here}.name", name)
        names.add(name)


def _validate_ephemeral(errs: Errors, raw: Any, at: str) -> None:
    source = mapping(raw, at)
    template = source.get("volumeClaimTemplate")
    if template is None:
        errs.required(f"{at}.volumeClaimTemplate")
        return
    template = mapping(template, f"{at}.volumeClaimTemplate")
    check_claim_spec(
        errs,
        f"{at}.volumeClaimTemplate.spec",
        mapping(template.get("spec"), f"{at}.volumeClaimTemplate.spec"),
    )


def _validate_status_update(errs: Errors, pod: Obj, old: Obj) -> None:
    """``ValidatePodStatusUpdate``: nodeName unchanged, nominatedNodeName a node name, condition types."""
    status = mapping(pod.get("status"), "status")
    if (pod.get("spec") or {}).get("nodeName") != (old.get("spec") or {}).get("nodeName"):
        errs.forbidden("status.nodeName", "may not be changed directly")
    old_status = old.get("status") or {}
    if status is old_status:
        return
    nominated = text(status.get("nominatedNodeName"), "status.nominatedNodeName")
    if nominated and nominated != old_status.get("nominatedNodeName"):
        for msg in dns1123_subdomain_errors(nominated):
            errs.invalid("status.nominatedNodeName", nominated, msg)
    conditions = status.get("conditions")
    if conditions and conditions is not old_status.get("conditions"):
        for i, raw in enumerate(_list(conditions, "status.conditions")):
            cond = mapping(raw, f"status.conditions[{i}]")
            kind = text(cond.get("type"), f"status.conditions[{i}].type")
            for msg in qualified_name_errors(kind):
                errs.invalid(f"status.conditions[{i}].type", kind, msg)


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"{field}: expected a list")
    return value

"""Feature gates: kube-scheduler v1.35's gates that change scheduling, and what ksched implements.

``--feature-gates`` may set a gate only to the value ksched's code implements: the code has one
behaviour per gate (no plugin is rewired by a gate), so a gate set otherwise would be a silent
ignore. An unknown gate is refused as upstream refuses it (``unrecognized feature gate``).

Defaults are v1.35's versioned defaults in ``pkg/features/kube_features.go``. ``implemented`` is the
value ksched's behaviour matches: for most gates the default; for an alpha gate that ksched does not
implement, ``False`` (the default), so asking for ``true`` fails. A gate with ``both`` has code for
either value (the framework reads it), so ``--feature-gates`` may set it either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ksched.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Gate:
    """One feature gate as kube-scheduler v1.35 has it."""

    name: str
    default: bool
    stage: str
    """ALPHA, BETA or GA (GA gates are locked to their default upstream)."""
    implemented: bool
    """The value ksched's code behaves as."""
    why: str
    """Where the behaviour lives, or why the other value is not available."""
    both: bool = False
    """Either value is implemented (``implemented`` is then the default)."""

    @property
    def locked(self) -> bool:
        return self.stage == "GA"


def _g(
    name: str, default: bool, stage: str, why: str, implemented: bool | None = None, *, both: bool = False
) -> Gate:
    return Gate(name, default, stage, default if implemented is None else implemented, why, both)


GATES: Final[tuple[Gate, ...]] = (
    _g("SchedulerQueueingHints", True, "GA", "plugins' queueing hints decide every requeue"),
    _g("SchedulerAsyncPreemption", True, "BETA", "DefaultPreemption deletes victims off the cycle"),
    _g("SchedulerPopFromBackoffQ", True, "BETA", "the queue pops from backoffQ when activeQ is empty"),
    _g("SchedulerAsyncAPICalls", True, "BETA", "API writes go through the outbox off the scheduling thread"),
    _g("DynamicResourceAllocation", True, "GA", "the DynamicResources plugin is in the default profile"),
    _g("NodeInclusionPolicyInPodTopologySpread", True, "GA", "nodeAffinityPolicy/nodeTaintsPolicy honoured"),
    _g("MatchLabelKeysInPodTopologySpread", True, "BETA", "PodTopologySpread honours matchLabelKeys"),
    _g("MatchLabelKeysInPodAffinity", True, "GA", "InterPodAffinity honours (mis)matchLabelKeys"),
    _g("SidecarContainers", True, "GA", "restartable init containers count as sidecars in requests"),
    _g("InPlacePodVerticalScaling", True, "GA", "requests follow the pod's allocated resources"),
    _g("PodLevelResources", True, "BETA", "spec.resources of a pod is its request"),
    _g("StorageCapacityScoring", False, "ALPHA", "VolumeBinding scores no storage capacity"),
    _g("DRAAdminAccess", True, "BETA", "only the default: ksched's DynamicResources has one behaviour"),
    _g("DRAPrioritizedList", True, "BETA", "only the default: ksched's DynamicResources has one behaviour"),
    _g("DRADeviceTaints", False, "ALPHA", "ksched's allocator does not model device taints"),
    _g("DRAPartitionableDevices", False, "ALPHA", "ksched's allocator does not model shared counters"),
    _g("DRAConsumableCapacity", False, "ALPHA", "ksched's allocator does not model consumable capacity"),
    _g("DRADeviceBindingConditions", False, "ALPHA", "ksched's PreBind does not wait on binding conditions"),
    _g("DRAExtendedResource", False, "ALPHA", "extended resources are not backed by DRA devices"),
    _g(
        "DRASchedulerFilterTimeout",
        True,
        "BETA",
        "DynamicResourcesArgs.filterTimeout is accepted (0s or 10s)",
    ),
    _g(
        "OpportunisticBatching",
        True,
        "BETA",
        "same-signature pods reuse the last cycle's results, exactly (ksched.framework.batching)",
        both=True,
    ),
)
BY_NAME: Final[Mapping[str, Gate]] = MappingProxyType({g.name: g for g in GATES})


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The effective gates of this process (defaults plus ``--feature-gates``)."""

    values: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; a name outside :data:`GATES` is a programming error."""
        return self.values[name]


DEFAULT_GATES: Final = FeatureGates(MappingProxyType({g.name: g.default for g in GATES}))


def feature_gates(requested: Mapping[str, bool]) -> FeatureGates:
    """Apply ``--feature-gates`` ``requested`` on the defaults, refusing what ksched cannot honour.

    A name may carry upstream's component prefix (``kube:SchedulerQueueingHints=true``); ``kube``
    is the only component. ``AllAlpha``/``AllBeta`` are upstream's switches for every gate of a
    stage; they are refused when they would turn on a gate ksched does not implement.
    """
    values = dict(DEFAULT_GATES.values)
    for key, value in requested.items():
        component, _, name = key.rpartition(":")
        if component not in ("", "kube"):
            raise ConfigError(
                "--feature-gates", f"component not registered: {component} (ksched has only the kube gates)"
            )
        if name in ("AllAlpha", "AllBeta"):
            stage = name[3:].upper()
            for gate in GATES:
                if gate.stage == stage:
                    _check(gate, value, via=name)
                    values[gate.name] = value
            continue
        gate = BY_NAME.get(name)
        if gate is None:
            raise ConfigError(
                "--feature-gates",
                f"unrecognized feature gate: {name} (ksched knows the v1.35 scheduler gates: "
                f"{', '.join(sorted(BY_NAME))})",
            )
        _check(gate, value)
        values[name] = value
    return FeatureGates(MappingProxyType(values))


def _check(gate: Gate, value: bool, via: str = "") -> None:
    if gate.locked and value != gate.default:
        raise ConfigError(
            "--feature-gates",
            f"cannot set feature gate {gate.name} to {str(value).lower()}, feature is locked to "
            f"{str(gate.default).lower()}" + (f" (via {via})" if via else ""),
        )
    if value != gate.implemented and not gate.both:
        raise ConfigError(
            "--feature-gates",
            f"{gate.name}={str(value).lower()}"
            + (f" (via {via})" if via else "")
            + f" is not supported: ksched implements {gate.name}={str(gate.implemented).lower()} "
            f"({gate.why})",
        )

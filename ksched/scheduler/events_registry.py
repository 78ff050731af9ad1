"""Cluster events and which plugins care about them: what moves a parked pod back into the queue.

Upstream: ``staging/src/k8s.io/kube-scheduler/framework/types.go`` (``ActionType``, ``EventResource``,
``ClusterEvent.Label``), ``pkg/scheduler/framework/types.go`` (``MatchClusterEvents``),
``pkg/scheduler/framework/events.go`` (special labels, ``PodSchedulingPropertiesChange``) and each
plugin's ``EventsToRegister``.

A :class:`ClusterEvent` is a resource plus a bitset of actions. A plugin *registers* events; an
*incoming* event matches a registered one when the resources match (``Pod`` also matches the
internal ``AssignedPod`` / ``UnschedulablePod``) and the incoming action is the same as or more
specific than the registered one. The wildcard event ``*/All`` matches everything.

The queue asks each rejecting plugin's QueueingHint functions whether an event may help a
particular pod (:meth:`EventsRegistry.hints_for`, per profile). A plugin's registrations come from
its ``queueing_hints()`` and ``events_to_register()``; an in-tree plugin without either keeps
:data:`DEFAULT_PLUGIN_EVENTS`, whose events have no hint functions (every matching event may help).
Handlers send the specific events upstream derives (``AssignedPodDelete`` rather than
``PodDelete``, ``UpdateNodeTaint`` rather than ``NodeUpdate``), so the memoized "deaf plugins" set
answers most events for most parked pods without calling a hint.

A plugin missing from the registry is treated like an upstream plugin without EnqueueExtensions:
it is interested in every event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntFlag
from typing import TYPE_CHECKING, Final

from ksched.config import names
from ksched.errors import ConfigError

if TYPE_CHECKING:
    from ksched.model.pod import Pod


class ActionType(IntFlag):
    """Upstream's ``ActionType`` bits, in upstream's order (the order matters for matching)."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    """Taints, or ``spec.unschedulable`` turning false."""
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    UPDATE_POD_SCALE_DOWN = 1 << 9
    UPDATE_POD_TOLERATION = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    ALL = (1 << 13) - 1
    UPDATE = ALL & ~(ADD | DELETE)


_ACTION_NAMES: Final[dict[int, str]] = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}


def action_name(action: ActionType) -> str:
    """Upstream ``ActionType.String()``: empty for a combination that has no name."""
    return _ACTION_NAMES.get(int(action), "")


# Event resources (upstream ``EventResource``); AssignedPod / UnschedulablePod are internal: only
# incoming events use them, plugins register ``Pod``.
POD: Final = "Pod"
ASSIGNED_POD: Final = "AssignedPod"
UNSCHEDULABLE_POD: Final = "UnschedulablePod"
NODE: Final = "Node"
PERSISTENT_VOLUME: Final = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM: Final = "PersistentVolumeClaim"
CSI_NODE: Final = "storage.k8s.io/CSINode"
CSI_DRIVER: Final = "storage.k8s.io/CSIDriver"
VOLUME_ATTACHMENT: Final = "storage.k8s.io/VolumeAttachment"
CSI_STORAGE_CAPACITY: Final = "storage.k8s.io/CSIStorageCapacity"
STORAGE_CLASS: Final = "storage.k8s.io/StorageClass"
RESOURCE_CLAIM: Final = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICE: Final = "resource.k8s.io/ResourceSlice"
DEVICE_CLASS: Final = "resource.k8s.io/DeviceClass"
WILDCARD: Final = "*"

# Special event labels (``pkg/scheduler/framework/events.go``), used as the ``event`` label of
# ``scheduler_queue_incoming_pods_total``.
SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
BACKOFF_COMPLETE: Final = "BackoffComplete"
POP_FROM_BACKOFF_Q: Final = "PopFromBackoffQ"
FORCE_ACTIVATE: Final = "ForceActivate"
UNSCHEDULABLE_TIMEOUT: Final = "UnschedulableTimeout"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster: ``resource`` plus ``action`` bits; ``label`` names it in metrics."""

    resource: str
    action: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """Upstream ``Label()``: the custom label, else resource and action (``NodeAdd``)."""
        return self.custom_label or f"{self.resource}{action_name(self.action)}"

    @property
    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL


def _resources_match(registered: str, incoming: str) -> bool:
    return registered in (WILDCARD, incoming) or (
        registered == POD and incoming in (ASSIGNED_POD, UNSCHEDULABLE_POD)
    )


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Upstream ``MatchClusterEvents``: is ``incoming`` the same as, or more specific than, ``registered``?

    A wildcard ``incoming`` event matches only a wildcard registration; the queue treats wildcard
    incoming events specially (they move every pod) before asking this.
    """
    if registered.is_wildcard:
        return True
    return (
        _resources_match(registered.resource, incoming.resource)
        and bool(registered.action & incoming.action)
        and int(incoming.action) <= int(registered.action)
    )


def match_any(incoming: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    return any(match_cluster_events(r, incoming) for r in registered)


A = ActionType
# Incoming events the informers produce.
NODE_ADD: Final = ClusterEvent(NODE, A.ADD)
NODE_DELETE: Final = ClusterEvent(NODE, A.DELETE)
NODE_UPDATE: Final = ClusterEvent(NODE, A.UPDATE)
NODE_ALLOCATABLE_CHANGE: Final = ClusterEvent(NODE, A.UPDATE_NODE_ALLOCATABLE)
NODE_LABEL_CHANGE: Final = ClusterEvent(NODE, A.UPDATE_NODE_LABEL)
NODE_TAINT_CHANGE: Final = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
NODE_CONDITION_CHANGE: Final = ClusterEvent(NODE, A.UPDATE_NODE_CONDITION)
NODE_ANNOTATION_CHANGE: Final = ClusterEvent(NODE, A.UPDATE_NODE_ANNOTATION)
ASSIGNED_POD_ADD: Final = ClusterEvent(ASSIGNED_POD, A.ADD)
ASSIGNED_POD_DELETE: Final = ClusterEvent(ASSIGNED_POD, A.DELETE)
UNSCHEDULED_POD_ADD: Final = ClusterEvent(UNSCHEDULABLE_POD, A.ADD)
UNSCHEDULED_POD_UPDATE: Final = ClusterEvent(UNSCHEDULABLE_POD, A.UPDATE)
UNSCHEDULED_POD_DELETE: Final = ClusterEvent(UNSCHEDULABLE_POD, A.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT: Final = ClusterEvent(WILDCARD, A.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE: Final = ClusterEvent(WILDCARD, A.ALL, FORCE_ACTIVATE)
WILDCARD_EVENT: Final = ClusterEvent(WILDCARD, A.ALL)


def _ev(resource: str, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, action)


DEFAULT_PLUGIN_EVENTS: Final[Mapping[str, tuple[ClusterEvent, ...]]] = {
    # Read from upstream 1.34 (QueueingHints on, InPlacePodVerticalScaling on).
    names.NODE_RESOURCES_FIT: (
        _ev(POD, A.DELETE | A.UPDATE_POD_SCALE_DOWN),
        _ev(NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE),
    ),
    names.SCHEDULING_GATES: (_ev(POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),),
    names.DEFAULT_PREEMPTION: (_ev(POD, A.DELETE),),
    # Reference §3.5, not re-read from source.
    names.TAINT_TOLERATION: (_ev(NODE, A.ADD | A.UPDATE_NODE_TAINT), _ev(POD, A.UPDATE_POD_TOLERATION)),
    names.NODE_AFFINITY: (_ev(NODE, A.ADD | A.UPDATE_NODE_LABEL),),
    names.NODE_UNSCHEDULABLE: (_ev(NODE, A.ADD | A.UPDATE_NODE_TAINT), _ev(POD, A.UPDATE_POD_TOLERATION)),
    names.NODE_NAME: (_ev(NODE, A.ADD),),
    names.NODE_PORTS: (_ev(POD, A.DELETE), _ev(NODE, A.ADD)),
    names.INTER_POD_AFFINITY: (
        _ev(POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE),
        _ev(NODE, A.ADD | A.UPDATE_NODE_LABEL),
    ),
    names.POD_TOPOLOGY_SPREAD: (  # upstream with QueueingHints: a new toleration can help (nodeTaintsPolicy)
        _ev(POD, A.ADD | A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION | A.DELETE),
        _ev(NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
    ),
    # Read from upstream volume_binding.go (v1.35, QueueingHints on: no UpdateNodeTaint), in its order;
    # the plugin's own events_to_register says the same (a test holds them together).
    names.VOLUME_BINDING: (
        _ev(STORAGE_CLASS, A.ADD | A.UPDATE),
        _ev(PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE),
        _ev(PERSISTENT_VOLUME, A.ADD | A.UPDATE),
        _ev(NODE, A.ADD | A.UPDATE_NODE_LABEL),
        _ev(CSI_NODE, A.ADD | A.UPDATE),
        _ev(CSI_DRIVER, A.UPDATE),
        _ev(CSI_STORAGE_CAPACITY, A.ADD | A.UPDATE),
    ),
    # Read from upstream's volume plugins (QueueingHints on; their hint functions are the plugins'
    # queueing_hints(), which the queue does not ask yet).
    names.VOLUME_RESTRICTIONS: (
        _ev(POD, A.DELETE),
        _ev(NODE, A.ADD),
        _ev(PERSISTENT_VOLUME_CLAIM, A.ADD),
    ),
    names.VOLUME_ZONE: (
        _ev(STORAGE_CLASS, A.ADD),
        _ev(NODE, A.ADD | A.UPDATE_NODE_LABEL),
        _ev(PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE),
        _ev(PERSISTENT_VOLUME, A.ADD | A.UPDATE),
    ),
    names.NODE_VOLUME_LIMITS: (
        _ev(CSI_NODE, A.ADD),
        _ev(CSI_NODE, A.UPDATE),
        _ev(POD, A.DELETE),
        _ev(PERSISTENT_VOLUME_CLAIM, A.ADD),
        _ev(VOLUME_ATTACHMENT, A.DELETE),
    ),
    names.DYNAMIC_RESOURCES: (
        _ev(RESOURCE_CLAIM, A.ADD | A.UPDATE),
        _ev(RESOURCE_SLICE, A.ADD | A.UPDATE),
        _ev(DEVICE_CLASS, A.ADD | A.UPDATE),
        _ev(POD, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        _ev(NODE, A.ADD | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
    ),
    # Score-only, sort and bind plugins never reject a pod, so they register nothing.
    names.NODE_RESOURCES_BALANCED_ALLOCATION: (),
    names.IMAGE_LOCALITY: (),
    names.PRIORITY_SORT: (),
    names.DEFAULT_BINDER: (),
}
"""Events each in-tree plugin registers (upstream ``EventsToRegister``), per reference §3.5."""


HintFn = Callable[["Pod", object, object], object]
"""A queueing hint: ``fn(pod, old, new)`` answers ``QueueingHint.QUEUE`` or ``QUEUE_SKIP``."""


@dataclass(frozen=True, slots=True)
class Registration:
    """One event a plugin registered, with its hint function (None: the event always may help)."""

    event: ClusterEvent
    hint: HintFn | None = None


class EventsRegistry:
    """Which of the enabled plugins registered which events, and their hint functions per profile.

    ``enabled`` names the plugins of the profiles in use (``None``: every plugin in ``events``);
    ``events`` maps a plugin name to its registrations (default :data:`DEFAULT_PLUGIN_EVENTS`,
    all without hint functions); ``hints`` maps a profile (scheduler name) to each plugin's
    :class:`Registration` list, as upstream keeps one queueing-hint map per profile (the same
    plugin may be configured differently in two profiles). Immutable after construction; the
    answers per event are memoized, because the queue asks the same few questions for every pod it
    parks and every pod bound (matching walks every registration, tens of IntFlag operations), and
    the set of distinct events is small and fixed. The memo needs no lock: a race at worst computes
    one answer twice.
    """

    __slots__ = ("_by_plugin", "_deaf", "_hint_memo", "_hints", "_of_interest", "_registered")

    def __init__(
        self,
        enabled: Iterable[str] | None = None,
        events: Mapping[str, Iterable[ClusterEvent]] = DEFAULT_PLUGIN_EVENTS,
        hints: Mapping[str, Mapping[str, Sequence[Registration]]] | None = None,
    ) -> None:
        plugins = list(events) if enabled is None else list(enabled)
        self._by_plugin: dict[str, tuple[ClusterEvent, ...]] = {
            p: tuple(events[p]) if p in events else (WILDCARD_EVENT,) for p in plugins
        }
        self._registered: tuple[ClusterEvent, ...] = tuple(
            {e: None for evs in self._by_plugin.values() for e in evs}
        )
        self._hints = {profile: dict(by_plugin) for profile, by_plugin in (hints or {}).items()}
        self._of_interest: dict[ClusterEvent, bool] = {}
        self._deaf: dict[ClusterEvent, frozenset[str]] = {}
        self._hint_memo: dict[tuple[str, str, ClusterEvent], tuple[HintFn | None, ...]] = {}

    def events_for(self, plugin: str) -> tuple[ClusterEvent, ...]:
        """The events ``plugin`` registered; an unknown plugin gets the wildcard, like upstream."""
        return self._by_plugin.get(plugin, (WILDCARD_EVENT,))

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Upstream ``isEventOfInterest``: a wildcard event, or one some enabled plugin registered."""
        known = self._of_interest.get(event)
        if known is None:
            known = self._of_interest[event] = event.is_wildcard or match_any(event, self._registered)
        return known

    def deaf_plugins(self, event: ClusterEvent) -> frozenset[str]:
        """The known plugins whose registrations do not match ``event``: a parked pod whose
        rejecting plugins all belong here stays parked without asking any hint. A plugin missing
        from the registry is never deaf (it gets the wildcard)."""
        deaf = self._deaf.get(event)
        if deaf is None:
            deaf = self._deaf[event] = frozenset(
                p for p, evs in self._by_plugin.items() if not match_any(event, evs)
            )
        return deaf

    def plugin_interested(self, plugin: str, event: ClusterEvent) -> bool:
        """Would one of ``plugin``'s registrations match ``event``?"""
        return plugin not in self.deaf_plugins(event)

    def hints_for(self, profile: str, plugin: str, event: ClusterEvent) -> tuple[HintFn | None, ...]:
        """The hint functions of ``plugin``'s registrations in ``profile`` that match ``event``
        (None for a registration without one: it answers Queue). Empty when none matches.

        A profile or plugin without hint registrations falls back to its events with no hint
        functions, i.e. every matching event may help (upstream's nil ``QueueingHintFn``)."""
        key = (profile, plugin, event)
        found = self._hint_memo.get(key)
        if found is None:
            regs = self._hints.get(profile, {}).get(plugin)
            if regs is None:
                regs = [Registration(e) for e in self.events_for(plugin)]
            found = self._hint_memo[key] = tuple(
                r.hint for r in regs if event.is_wildcard or match_cluster_events(r.event, event)
            )
        return found


_ACTION_BY_NAME: Final[dict[str, ActionType]] = {
    name: ActionType(bits) for bits, name in _ACTION_NAMES.items()
}


def _event_of_spec(name: str, spec: object) -> ClusterEvent:
    """A ``ksched.framework.api.ClusterEventSpec`` (resource and action names) or a
    :class:`ClusterEvent` as a ClusterEvent; a bad one raises ValueError naming the plugin."""
    if isinstance(spec, ClusterEvent):
        return spec
    bits = ActionType.NONE
    for action in getattr(spec, "actions", ()):
        if action not in _ACTION_BY_NAME:
            raise ValueError(f"plugin {name}: events_to_register: unknown action {action!r}")
        bits |= _ACTION_BY_NAME[action]
    resource = getattr(spec, "resource", None)
    if not isinstance(resource, str) or not bits:
        raise ValueError(f"plugin {name}: events_to_register returned {spec!r}; use api.cluster_event()")
    return ClusterEvent(resource, bits)


def registrations_of_plugin(plugin: object) -> tuple[Registration, ...] | None:
    """What a plugin registers: the events of ``events_to_register()``, each with its hint
    function from ``queueing_hints()`` when the plugin has one for it (events only
    ``queueing_hints()`` names count too); None when the plugin has neither method. A bad
    registration or a hint that is not callable raises ValueError naming the plugin."""
    name = getattr(plugin, "name", repr(plugin))
    hints_fn = getattr(plugin, "queueing_hints", None)
    events_fn = getattr(plugin, "events_to_register", None)
    if hints_fn is None and events_fn is None:
        return None
    hints = dict(hints_fn()) if hints_fn is not None else {}
    specs = list(events_fn()) if events_fn is not None else []
    specs += [spec for spec in hints if spec not in specs]
    out = []
    for spec in specs:
        hint = hints.get(spec)
        if hint is not None and not callable(hint):
            raise ValueError(f"plugin {name}: queueing_hints: the hint for {spec!r} is not callable")
        out.append(Registration(_event_of_spec(name, spec), hint))
    return tuple(out)


def events_of_plugin(plugin: object) -> tuple[ClusterEvent, ...] | None:
    """The events a plugin registers (see :func:`registrations_of_plugin`), or None."""
    regs = registrations_of_plugin(plugin)
    return None if regs is None else tuple(r.event for r in regs)


def registry_for_profiles(frameworks: Mapping[str, object] | Iterable[object]) -> EventsRegistry:
    """The events and hint functions of every plugin of the profiles (``{scheduler name:
    framework}``, or frameworks whose ``profile`` names them). A plugin's own registration wins;
    an in-tree plugin without one keeps :data:`DEFAULT_PLUGIN_EVENTS`. A bad registration is a
    :class:`ConfigError` naming the plugin, so a typo in a custom plugin fails at start-up."""
    if isinstance(frameworks, Mapping):
        pairs = list(frameworks.items())
    else:
        pairs = [(str(getattr(fw, "profile", "")), fw) for fw in frameworks]
    own: dict[str, dict[ClusterEvent, None]] = {}
    hints: dict[str, dict[str, tuple[Registration, ...]]] = {}
    for profile, fw in pairs:
        for name, plugin in getattr(fw, "plugins", {}).items():
            try:
                regs = registrations_of_plugin(plugin)
            except Exception as exc:  # a typo in a custom plugin: fail at start-up, in one line
                raise ConfigError(f"plugin {name!r}", f"events_to_register: {exc}") from exc
            if regs is None:
                continue
            own.setdefault(name, {}).update((r.event, None) for r in regs)
            hints.setdefault(profile, {})[name] = regs
    events = dict(DEFAULT_PLUGIN_EVENTS) | {name: tuple(evs) for name, evs in own.items()}
    return EventsRegistry(events=events, hints=hints)


def pod_update_events(old: Pod, new: Pod) -> list[ClusterEvent]:
    """Upstream ``PodSchedulingPropertiesChange`` on ksched's pod records.

    ``UpdatePodGeneratedResourceClaim`` is not derived: the record has no resource claim status.
    """
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULABLE_POD
    actions: list[ActionType] = []
    if dict(old.labels) != dict(new.labels):
        actions.append(A.UPDATE_POD_LABEL)
    if any(k not in new.requests or new.requests[k] < v for k, v in old.requests.items()):
        actions.append(A.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(old.tolerations) != len(new.tolerations):
        actions.append(A.UPDATE_POD_TOLERATION)
    if not actions:
        actions.append(A.UPDATE)
    return [ClusterEvent(resource, a) for a in actions]


__all__ = [
    "DEFAULT_PLUGIN_EVENTS",
    "ActionType",
    "ClusterEvent",
    "EventsRegistry",
    "HintFn",
    "Registration",
    "events_of_plugin",
    "match_any",
    "match_cluster_events",
    "pod_update_events",
    "registrations_of_plugin",
    "registry_for_profiles",
]

"""One exception tree for ksched.

Every error a cluster operator can see names the object, the field, the offending value and, where
there is one, what to do about it. Lower layers are wrapped with ``raise ... from exc`` so the cause
stays visible in debug logs while the message stays readable.

::

    KschedError
    ├── InputError                 bad data from a user or the API (never a ksched bug)
    │   ├── QuantityError          a resource quantity that is not valid or too large
    │   ├── ObjectError            a Pod/Node/... whose field is missing or of the wrong type
    │   ├── ConfigError            a KubeSchedulerConfiguration that fails validation
    │   └── ManifestError          a file that is not the kind of document expected
    ├── CacheError                 the cache was asked to do something its state forbids
    │   └── OverlayError           a what-if overlay used out of turn
    │       └── OverlayNotRestored an overlay left the arrays not as it found them (debug check)
    ├── PluginError                a plugin failed at run time (becomes a SchedulerError status)
    ├── HandleNotReady             a plugin's factory used the framework before it was built
    ├── BuildError                 the compiled kernels disagree with the Python source (rebuild)
    └── ApiError                   the Kubernetes API answered with an error
        ├── Conflict (409)
        ├── Gone (410)
        ├── NotFound (404)
        └── TooManyRequests (429)
"""

from __future__ import annotations

from ksched.bounded import preview


class KschedError(Exception):
    """Base of every error ksched raises on purpose."""


class InputError(KschedError):
    """Data given to ksched (an API object, a file, a config) is not acceptable."""


def describe_object(kind: str, namespace: str | None, name: str | None) -> str:
    """``Pod default/web-1`` or ``Node n1``: how messages name an object."""
    if namespace:
        return f"{kind} {namespace}/{name or '<unnamed>'}"
    return f"{kind} {name or '<unnamed>'}"


class ObjectError(InputError):
    """An API object has a missing, malformed or out-of-range field.

    ``obj`` is how the object is named (``Pod default/web-1``), ``field`` the JSON path
    (``spec.containers[0].resources.requests.cpu``) and ``problem`` what is wrong with it.
    """

    def __init__(self, obj: str, field: str, problem: str) -> None:
        self.obj = obj
        self.field = field
        self.problem = problem
        super().__init__(f"{obj}: {field}: {problem}" if field else f"{obj}: {problem}")


class QuantityError(ObjectError):
    """A resource quantity cannot be parsed, or is negative where it may not be, or too large."""

    def __init__(self, value: object, reason: str, *, obj: str = "", field: str = "") -> None:
        self.value = value
        problem = f"invalid quantity {preview(value)}: {reason}"
        super().__init__(obj or "quantity", field, problem)


class ConfigError(InputError):
    """A KubeSchedulerConfiguration (or a plugin's args) fails validation.

    ``path`` is the field path, e.g. ``profiles[0].pluginConfig[1].args.scoringStrategy.type``.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class ManifestError(InputError):
    """A file given on the command line is not what it should be (not YAML, not a Pod, ...)."""


class CacheError(KschedError):
    """The cache refused an operation that its state machine does not allow."""


class OverlayError(CacheError):
    """A what-if overlay (``ClusterCache.what_if``) was used out of turn: moved or closed while
    an overlay opened after it is still open, or entered twice."""


class OverlayNotRestored(OverlayError):
    """The overlay check (``KSCHED_CHECK_OVERLAY=1``) found the cache not as the overlay found it.

    ``array`` names what differs (a node-table array, ``ports`` or ``pods``) and ``row`` the first
    differing row (-1 when not a row). A bug in whatever moved pods or amounts during the overlay
    without going through it; the message says where to look.
    """

    def __init__(self, array: str, row: int, detail: str) -> None:
        self.array = array
        self.row = row
        where = f" at row {row}" if row >= 0 else ""
        super().__init__(
            f"what-if overlay left {array}{where} changed: {detail}; every change during an overlay "
            "must go through it (RowAdjustment / PodMoves / add= / remove=) so that it is put back exactly"
        )


class PluginError(KschedError):
    """A plugin raised or returned an invalid result while scheduling a pod."""

    def __init__(self, plugin: str, problem: str) -> None:
        self.plugin = plugin
        self.problem = problem
        super().__init__(f'plugin "{plugin}": {problem}')


class ExtenderError(KschedError):
    """A scheduler extender failed a call: unreachable, an error status, a timeout, an oversized or
    malformed reply, or a reply naming nodes or pods it was not given. The message is the cause,
    upstream's way for HTTP failures (``Post "<url>": <cause>``) and naming the extender otherwise."""

    def __init__(self, extender: str, verb: str, message: str) -> None:
        self.extender = extender
        self.verb = verb
        super().__init__(message)


class HandleNotReady(KschedError):
    """A plugin called the framework's runners through its Handle before the profile was built."""


class BuildError(KschedError):
    """The compiled extension in ``ksched/_fast`` was built from sources that disagree with the
    Python side's (a stale or mismatched build); the message names what differs."""


class ApiError(KschedError):
    """The Kubernetes API answered a request with an error status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"API error {status} {reason}: {message}")


class Conflict(ApiError):
    """409: the object changed (stale resourceVersion) or the pod is already bound."""


class Gone(ApiError):
    """410: the resourceVersion asked for is older than the server keeps; relist."""


class NotFound(ApiError):
    """404: the object (or resource) does not exist."""


class TooManyRequests(ApiError):
    """429: the server asks the client to slow down; ``retry_after_s`` says for how long."""

    def __init__(self, status: int, reason: str, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(status, reason, message)
        self.retry_after_s = retry_after_s

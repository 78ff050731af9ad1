"""DefaultBinder: binds through the ``pods/binding`` subresource.

Upstream: ``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``. The HTTP call is
made by the scheduler's I/O loop; this plugin only builds the Binding body.
"""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import Handle
from ksched.model.pod import Pod

NAME: Final = names.DEFAULT_BINDER


class DefaultBinder:
    name = NAME

    def binding(self, pod: Pod, node_name: str) -> dict[str, Any]:
        """The Binding object upstream posts: the pod's uid acts as a precondition."""
        return {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "target": {"kind": "Node", "name": node_name},
        }


def new(args: Any, handle: Handle) -> DefaultBinder:
    return DefaultBinder()


__all__ = ["NAME", "DefaultBinder", "new"]

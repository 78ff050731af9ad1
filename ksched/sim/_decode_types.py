"""The JSON decoder's checks: a field of the wrong type, or an integer out of range, is a 400.

kube-apiserver decodes a body into Go structs before defaulting and validation; a value the decoder
cannot place (``spec: "hello"``, ``priority: 1e40``) is answered 400 BadRequest with the decoder's
message (``json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec``).
"""

from __future__ import annotations

from typing import Any

from ksched.sim._resources import ResourceType


def check(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Raise StatusError 400 if ``obj`` would not decode as ``rtype``'s Go type."""

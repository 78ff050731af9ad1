"""Validation of the core kinds a scheduler reads most: Pod and Node.

The rules live in :mod:`ksched.sim._pod_validation` and :mod:`ksched.sim._node_validation`;
ObjectMeta is checked for every kind in :mod:`ksched.sim._meta_validation`.
"""

from __future__ import annotations

from ksched.sim._node_validation import validate_node
from ksched.sim._pod_validation import validate_pod
from ksched.sim._storage_validation import KindValidator

VALIDATORS: dict[str, KindValidator] = {"pods": validate_pod, "nodes": validate_node}

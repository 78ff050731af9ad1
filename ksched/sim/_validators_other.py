"""Validation of the other served kinds (namespaces, events, leases, PDBs, workloads, RBAC, ...)."""

from __future__ import annotations

from ksched.sim._storage_validation import KindValidator

VALIDATORS: dict[str, KindValidator] = {}

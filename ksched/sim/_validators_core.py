"""Validation of the core kinds a scheduler reads most: Pod and Node."""

from __future__ import annotations

from ksched.sim._storage_validation import KindValidator

VALIDATORS: dict[str, KindValidator] = {}

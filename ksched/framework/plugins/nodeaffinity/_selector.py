"""Moved to :mod:`ksched.cache.node_selector` (PodTopologySpread needs it too); re-exported here."""

from ksched.cache.node_selector import (
    NAME_FIELD,
    CompiledPreferred,
    CompiledTerm,
    RowMatcher,
    aggregate_message,
    compile_preferred,
    compile_required,
    compile_term,
    field_requirement_error,
    label_requirement_errors,
)

__all__ = [
    "NAME_FIELD",
    "CompiledPreferred",
    "CompiledTerm",
    "RowMatcher",
    "aggregate_message",
    "compile_preferred",
    "compile_required",
    "compile_term",
    "field_requirement_error",
    "label_requirement_errors",
]

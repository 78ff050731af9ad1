"""Storing what kube-apiserver refuses, for the tests that show ksched survives such an object.

A real cluster can still serve one (an object stored by an older or skewed API server, a webhook
that rewrote it, etcd written directly): the informers and the scheduler must report it and carry
on. The embedded cluster refuses it as kube-apiserver does, so these tests switch its admission
(decoding checks, defaults, validation, managedFields) off while they store it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from ksched.sim import _admission, _decode_types


def switch_admission_off(patch: pytest.MonkeyPatch) -> None:
    """Until ``patch`` is undone, the embedded cluster stores writes without admitting them."""
    patch.setattr(_admission, "admit_create", lambda *a, **k: None)
    patch.setattr(_admission, "admit_update", lambda *a, **k: None)
    patch.setattr(_decode_types, "check", lambda *a, **k: None)
    patch.setattr(_decode_types, "check_discarded", lambda *a, **k: None)


@contextlib.contextmanager
def admission_off() -> Iterator[None]:
    """Within the block, the embedded cluster stores writes without admitting them."""
    with pytest.MonkeyPatch.context() as patch:
        switch_admission_off(patch)
        yield

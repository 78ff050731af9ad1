"""The stand-ins' pure parts: volume matching, quantities as the provisioner writes them, the work
queue, and the command-line switches."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest

from ksched.sim._storage_process import StorageControllers
from ksched.sim.cli import add_storage_controller_flags, storage_controllers_from_args
from ksched.sim.storage_controllers._informer import WorkQueue
from ksched.sim.storage_controllers._matching import find_best_match, mismatch
from ksched.sim.storage_controllers.provisioner import binary_quantity, go_map
from tests.builders import make_pv, make_pvc


def available(pv: dict[str, Any]) -> dict[str, Any]:
    return {**pv, "status": {"phase": "Available"}}


def claim_with_uid(**kwargs: Any) -> dict[str, Any]:
    c = make_pvc("c", **kwargs)
    c["metadata"]["uid"] = "uid-c"
    return c


@pytest.mark.parametrize(
    ("volumes", "claim", "delay", "want"),
    [
        pytest.param(
            [
                make_pv("a", storage="1Gi", access_modes=("ReadWriteOnce", "ReadOnlyMany")),
                make_pv("b", storage="5Gi"),
            ],
            claim_with_uid(),
            False,
            "b",
            id="the group with the fewest access modes is tried first",
        ),
        pytest.param(
            [make_pv("a", storage="3Gi"), make_pv("b", storage="2Gi"), make_pv("c", storage="2Gi")],
            claim_with_uid(storage="2Gi"),
            False,
            "b",
            id="smallest, first by name among equals",
        ),
        pytest.param(
            [
                make_pv("a", storage="1Gi"),
                make_pv("b", storage="9Gi", claim_ref={"namespace": "default", "name": "c"}),
            ],
            claim_with_uid(),
            True,
            "b",
            id="pre-bound volume wins even when binding is delayed",
        ),
        pytest.param(
            [make_pv("a", storage="1Gi")], claim_with_uid(), True, None, id="delayed binding: no pick"
        ),
        pytest.param(
            [make_pv("a", labels={"t": "x"}), make_pv("b", labels={"t": "y"}, storage="2Gi")],
            claim_with_uid(selector={"matchLabels": {"t": "y"}}),
            False,
            "b",
            id="label selector",
        ),
        pytest.param(
            [
                make_pv("a", storage_class="gold"),
                make_pv("b", volume_mode="Block"),
                make_pv("c", storage="2Gi"),
            ],
            claim_with_uid(),
            False,
            "c",
            id="class and volume mode must match",
        ),
        pytest.param(
            [make_pv("a", claim_ref={"namespace": "default", "name": "c", "uid": "other"})],
            claim_with_uid(),
            False,
            None,
            id="bound to an older claim of that name",
        ),
    ],
)
def test_find_best_match(
    volumes: list[dict[str, Any]], claim: dict[str, Any], delay: bool, want: str | None
) -> None:
    got = find_best_match(claim, [available(v) for v in volumes], delay_binding=delay)
    assert (got["metadata"]["name"] if got else None) == want


def test_not_available_volumes_are_skipped() -> None:
    assert find_best_match(claim_with_uid(), [make_pv("a")], delay_binding=False) is None  # no phase yet


@pytest.mark.parametrize(
    ("volume", "why"),
    [
        pytest.param(make_pv("a", storage="1Mi"), "requested PV is too small", id="too small"),
        pytest.param(make_pv("a", storage_class="x"), "storageClassName does not match", id="class"),
        pytest.param(make_pv("a", volume_mode="Block"), "incompatible volumeMode", id="mode"),
        pytest.param(make_pv("a", access_modes=("ReadOnlyMany",)), "incompatible accessMode", id="access"),
        pytest.param(make_pv("a"), "", id="fits"),
    ],
)
def test_mismatch_reasons(volume: dict[str, Any], why: str) -> None:
    assert mismatch(volume, claim_with_uid()) == why


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1073741824, "1Gi"),
        (1610612736, "1536Mi"),
        (1000000000, "1000000000"),
        (512, "512"),
        (0, "0"),
        (2**60, "1Ei"),
    ],
)
def test_binary_quantity_is_upstreams_binary_si(n: int, text: str) -> None:
    assert binary_quantity(n) == text


def test_go_map_sorts_keys() -> None:
    assert go_map({"b": "2", "a": "1"}) == "map[a:1 b:2]"


def test_work_queue_dedups_and_requeues_a_key_added_while_syncing() -> None:
    async def scenario() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        q.add("a")
        q.add("a")
        q.add("b")
        assert len(q) == 2
        first = await q.get()
        q.add(first)  # while "processing": synced again after done()
        assert len(q) == 1
        q.done(first)
        return [await q.get(), await q.get()]

    assert asyncio.run(scenario()) == ["b", "a"]


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param([], StorageControllers(), id="all on by default"),
        pytest.param(["--no-provisioner"], StorageControllers(provisioner=False), id="no provisioner"),
        pytest.param(
            ["--no-pv-controller", "--no-ephemeral-controller"],
            StorageControllers(pv_controller=False, ephemeral=False),
            id="only the provisioner",
        ),
        pytest.param(
            ["--no-storage-controllers"],
            StorageControllers(pv_controller=False, provisioner=False, ephemeral=False),
            id="none",
        ),
    ],
)
def test_switches(argv: list[str], want: StorageControllers) -> None:
    parser = argparse.ArgumentParser()
    add_storage_controller_flags(parser)
    got = storage_controllers_from_args(parser.parse_args(argv))
    assert got == want and got.any is want.any

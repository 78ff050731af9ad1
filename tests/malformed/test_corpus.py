"""Every ready entry of every corpus file (``tests/corpus/*.yaml``) is answered as it says.

Object entries are POSTed to one embedded cluster over HTTP: an invalid one must be refused with its
code and a ``Status`` naming its field, a valid one accepted. Config entries are loaded by the
scheduler's config loader, which must refuse them with the expected fragment. Bomb recipes are
expanded into a file and given to ``ksched run --config`` / ``ksched explain`` in a child process
with a memory cap: refused in under 2 s (plus interpreter start), with the file and the fragment
in the message. Entries marked ``ready: false`` wait for validation that is not there yet; they are
not parametrized (tests/corpus/README.md).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.config import load_config
from ksched.errors import InputError
from ksched.sim import SimCluster, SimConfig
from tests.bounded_corpus import generate
from tests.malformed import corpus
from tests.malformed.gen import bomb_text
from tests.malformed.run import Api, check_answer

ROOT = Path(__file__).resolve().parents[2]
ALL = corpus.load()
READY = [e for e in ALL if e.ready]
BOMB_SECONDS = 2.0
BOMB_EXTRA_BYTES = 200 * 2**20
STARTUP_ALLOWANCE_S = 8.0
"""Interpreter start and imports in a child on a loaded machine; the bound itself is timed inside."""


def _id(e: corpus.Entry) -> str:
    name = e.name if isinstance(e, corpus.BombRecipe) else e.id
    return f"{e.file}:{name}"


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    cluster = SimCluster(SimConfig(seed=1, running_delay_s=0.0, grace_scale=0.0))
    cluster.add_nodes(2)
    client = Api(cluster.start())
    try:
        yield client
    finally:
        client.close()
        cluster.stop()


def test_every_corpus_file_parses_and_has_entries() -> None:
    """A file the harness cannot read fails here, by name, rather than silently testing nothing."""
    files = corpus.corpus_files()
    assert {"names.yaml", "messages.yaml", "seed_objects.yaml"} <= {f.name for f in files}
    for path in files:
        entries = corpus.load([path])
        assert entries, f"{path.name} has no entries"
        ids = [_id(e) for e in entries]
        assert len(ids) == len(set(ids)), f"{path.name} repeats an id"


@pytest.mark.parametrize("entry", READY, ids=_id)
def test_entry_is_answered_as_it_says(
    request: pytest.FixtureRequest, tmp_path: Path, entry: corpus.Entry
) -> None:
    """One test over every ready entry of every file, whatever its shape (none is left out)."""
    if isinstance(entry, corpus.ObjectEntry):
        _check_object(request.getfixturevalue("api"), entry)
    elif isinstance(entry, corpus.ConfigEntry):
        _check_config(tmp_path, entry)
    else:
        _check_bomb(tmp_path, entry)


def _check_object(api: Api, entry: corpus.ObjectEntry) -> None:
    code, body = api.request("POST", entry.path, entry.body)
    assert code != 0 and code < 500, f"{_id(entry)}: unhandled ({code}): {body}"
    if not entry.accept:
        assert not 200 <= code < 300, (
            f"{_id(entry)} was accepted; expected {entry.code or '4xx'} {entry.field}"
        )
    wrong = check_answer(entry, code, body)
    assert wrong is None, wrong


def _check_config(tmp_path: Path, entry: corpus.ConfigEntry) -> None:
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**doc, **entry.config}))
    with pytest.raises(InputError) as info:
        load_config(path)
    assert entry.expect in str(info.value) and path.name in str(info.value)


CHILD = """
import json, resource, sys, time
sys.argv = ["ksched", *json.loads(sys.argv[1])]
from ksched.cli import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
code = main(sys.argv[1:])
took = time.perf_counter() - start
extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"code": code, "seconds": took, "extra": extra}), file=sys.stderr)
"""


_WHERE = {"config": "config", "pod": "explain-pod", "cluster": "explain-cluster"}


def _bomb_argv(recipe: corpus.BombRecipe, tmp: Path) -> tuple[list[str], Path]:
    if recipe.where:
        raw = {"name": recipe.name, "kind": recipe.kind, "params": recipe.params, "where": recipe.where}
        path = generate(raw, tmp)
        target = _WHERE[recipe.where]
    else:
        path = tmp / f"{recipe.name}.yaml"
        path.write_text(bomb_text(recipe.kind, recipe.params))
        target = recipe.params.get("target", "config")
    if target == "config":
        return ["run", "--config", str(path)], path
    pod = tmp / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"
    )
    cluster = tmp / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    if target == "explain-pod":
        return ["explain", "--cluster", str(cluster), "--pod", str(path)], path
    return ["explain", "--cluster", str(path), "--pod", str(pod)], path


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def _check_bomb(tmp_path: Path, recipe: corpus.BombRecipe) -> None:
    argv, path = _bomb_argv(recipe, tmp_path)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=BOMB_SECONDS + STARTUP_ALLOWANCE_S,
        cwd=ROOT,
        preexec_fn=_cap_memory,
        check=False,
    )
    assert time.monotonic() - start < BOMB_SECONDS + STARTUP_ALLOWANCE_S
    lines = proc.stderr.strip().splitlines()
    stats: dict[str, Any] = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    assert stats, f"{recipe.name}: the child did not finish: {proc.stderr[-2000:]}"
    assert stats["code"] != 0 and "Traceback" not in proc.stderr
    assert stats["seconds"] < BOMB_SECONDS and stats["extra"] < BOMB_EXTRA_BYTES, stats
    assert path.name in proc.stderr and recipe.expect in proc.stderr


def test_recipes_expand_without_being_parsed() -> None:
    """The alias bomb is small on disk and large only when expanded: a small one counts right."""
    small = yaml.safe_load(bomb_text("alias_bomb", {"levels": 3, "width": 2}))
    assert json.dumps(small["value"]).count("lol") == 2**3
    assert len(bomb_text("alias_bomb", {"levels": 9, "width": 9})) < 1000
    assert bomb_text("deep", {"depth": 3}).endswith("value: [[[]]]\n")
    assert corpus.expand({"$list": {"k": "t{i}"}, "times": 2}) == [{"k": "t0"}, {"k": "t1"}]
    assert corpus.expand({"$entry": [{"$repeat": "ab", "times": 2}, 1]}) == {"abab": 1}

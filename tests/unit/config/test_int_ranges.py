"""Out-of-range integers (tests/corpus/numbers.yaml) are reported as out of range, by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from ksched.config.load import load_config
from ksched.errors import ConfigError, ManifestError
from ksched.explain import load_pod
from tests.bounded_corpus import CONFIG_BASE as BASE
from tests.bounded_corpus import POD_BASE, put, recipes

NUMBERS = recipes("numbers.yaml")


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("case", NUMBERS["config"], ids=[c["path"] for c in NUMBERS["config"]])
def test_a_config_integer_out_of_range(case: dict[str, Any], fmt: str, tmp_path: Path) -> None:
    doc = orjson.loads(orjson.dumps(BASE))
    put(doc, case["path"], case["value"])
    path = tmp_path / f"c.{fmt}"
    path.write_text(yaml.safe_dump(doc) if fmt == "yaml" else json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert case["expect"] in str(info.value)
    assert "float" not in str(info.value)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("case", NUMBERS["pod"], ids=[str(c["value"]) for c in NUMBERS["pod"]])
def test_a_pod_integer_out_of_range(case: dict[str, Any], fmt: str, tmp_path: Path) -> None:
    doc: dict[str, Any] = orjson.loads(orjson.dumps(POD_BASE))
    put(doc, case["path"], case["value"])
    path = tmp_path / f"p.{fmt}"
    path.write_text(yaml.safe_dump(doc) if fmt == "yaml" else json.dumps(doc))
    with pytest.raises(ManifestError) as info:
        load_pod(path)
    assert case["expect"] in str(info.value)

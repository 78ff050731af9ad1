"""benches/cpu_parts: samples land in the first part one of their frames names; the README gets the table."""

from __future__ import annotations

from pathlib import Path

from benches import cpu_parts


def test_a_sample_goes_to_the_first_part_that_names_one_of_its_frames(tmp_path: Path) -> None:
    raw = tmp_path / "s.raw"
    raw.write_text(
        "run (ksched/runner.py:1);Scheduler.run (l.py:2);Scheduler.schedule_one (l.py:3);"
        "Framework.schedule_pod (f.py:4) 7\n"
        "IOThread.start.<locals>.run (io.py:1);Informer.run (i.py:2);Informer._decode (i.py:3) 3\n"
        "Scheduler.schedule_one (l.py:3);Reporter.event (r.py:1) 2\n"
        "NodeTable.count_pod (n.py:1) 1\n"
    )
    got = cpu_parts.count_samples(raw, classify=True)
    assert got == {
        "scheduling cycle: PreFilter to selectHost": 7,
        "watch: objects decoded into pod and node records (I/O thread)": 3,
        "Scheduled event: body, series cache, POST": 2,
        cpu_parts.OTHER: 1,
    }
    assert cpu_parts.count_samples(raw, classify=False) == {cpu_parts.BIND_WORKER: 13}


def test_the_table_replaces_what_lies_between_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{cpu_parts.BEGIN}\nold\n{cpu_parts.END}\noutro\n")
    result = {
        "workload": "W",
        "nodes": 5000,
        "pods": 10,
        "load": 0.5,
        "parts": {cpu_parts.BIND_WORKER: 150.0},
    }
    cpu_parts.write_readme(readme, cpu_parts.render(result))
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith(f"{cpu_parts.END}\noutro\n")
    assert "| **all the scheduler's processes** | **150** |" in text

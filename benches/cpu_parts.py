"""Where a scheduled pod's CPU goes: the scheduler's processes, part by part, in µs per pod.

Runs ``ksched bench WORKLOAD`` and, once the scheduler is busy scheduling, samples its process and
its bind worker with py-spy (``--gil``: only the thread holding the interpreter counts, which is
what the processes' CPU time is spent on). Each sample is put in the first part of :data:`PARTS`
that one of its frames names; a part's share of a process's samples times the process's CPU per
measured pod (from the bench's own accounting, ``results.json``) is the part's µs per pod.

    python -m benches.cpu_parts [--workload SchedulingBasic] [--nodes 5000] [--pods 40000]
        [--seconds 15] [--out bench-out/cpu-parts] [--readme benches/README.md]

py-spy must be on the PATH (``pip install py-spy``; it is not a dependency of ksched). Run it on an
otherwise idle machine: the parts are shares of samples, but the bench's CPU per pod is not immune
to a busy machine. With ``--readme`` the table replaces what lies between :data:`BEGIN` and
:data:`END` in that file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

from ksched.bench.procs import children, sample

BEGIN = "<!-- cpu-parts:begin (python -m benches.cpu_parts regenerates this table) -->"
END = "<!-- cpu-parts:end -->"
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("watch: objects decoded into pod and node records (I/O thread)", ("Informer._decode",)),
    ("watch: stream read, split into lines, JSON-parsed (I/O thread)", ("ApiClient.watch", "Informer.")),
    (
        "Scheduled event: body, series cache, POST",
        ("Reporter.event", "create_event", "write_event", "ApiOutbox._send_event", "ApiOutbox._queue_event"),
    ),
    (
        "binding: hand-off to the bind worker, its answers",
        ("ApiOutbox._start_bind", "ApiOutbox._bind", "BindWorker.", "_LineReader."),
    ),
    ("scheduling cycle: PreFilter to selectHost", ("Framework.schedule_pod",)),
    ("bind confirmations applied (BindDone)", ("Scheduler._bind_done",)),
    ("informer events applied to cache and queue", ("Scheduler._apply", "Scheduler._informer_event")),
    ("queue: pop and flush", ("SchedulingQueue.",)),
    ("rest of schedule_one: assume, Reserve, Permit, hand-off", ("Scheduler.schedule_one",)),
    ("other scheduling-thread work", ("Scheduler.run",)),
    ("other I/O-thread work: asyncio, sockets, the loop", ("IOThread.",)),
)
OTHER = "other (py-spy could not unwind the whole stack, or elsewhere)"
BIND_WORKER = "bind worker process: POST pods/binding, answers, its loop"


def part_of(frames: list[str]) -> str:
    """The first part of :data:`PARTS` that one of ``frames`` (function names) belongs to."""
    for label, prefixes in PARTS:
        if any(f.startswith(prefixes) for f in frames):
            return label
    return OTHER


def count_samples(raw: Path, classify: bool) -> Counter[str]:
    """Samples per part of a py-spy raw file (``classify`` False: all in one :data:`BIND_WORKER`)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = [f.split(" (", 1)[0] for f in stack.split(";")]
        counts[part_of(frames) if classify else BIND_WORKER] += int(n)
    return counts


def _find(root: int, needle: str, timeout_s: float) -> int:
    """A descendant of ``root`` whose command line contains ``needle``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in _descendants(root):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if needle in cmd:
                return pid
        time.sleep(0.2)
    raise SystemExit(f"cpu_parts: no process running {needle!r} under the bench after {timeout_s:.0f} s")


def _descendants(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def _cpu_s(pid: int) -> float:
    got = sample(pid)
    if got is None:
        raise SystemExit(f"cpu_parts: process {pid} is gone (or /proc is not there)")
    return got.cpu_s


def _wait_until_busy(pid: int, cores: float = 0.5, timeout_s: float = 600.0) -> None:
    """Until ``pid`` uses ``cores`` of CPU over a second: the scheduler is scheduling."""
    deadline = time.monotonic() + timeout_s
    last = _cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = _cpu_s(pid)
        if now - last >= cores:
            return
        last = now
    raise SystemExit("cpu_parts: the scheduler never got busy")


def _record(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    cmd = ["py-spy", "record", "--pid", str(pid), "--gil", "--rate", "250", "--nonblocking"]
    cmd += ["-d", str(int(seconds)), "-f", "raw", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Run the bench, sample while it schedules; the parts in µs per pod."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    bench = [sys.executable, "-m", "ksched", "bench", args.workload, "--nodes", str(args.nodes)]
    bench += ["--pods", str(args.pods), "--no-progress", "--out", str(out / "bench")]
    with open(out / "bench.log", "wb") as log:
        proc = subprocess.Popen(bench, stdout=log, stderr=subprocess.STDOUT)
        scheduler = _find(proc.pid, "ksched run", 300)
        worker = _find(proc.pid, "ksched.kube.bind_worker", 300)
        _wait_until_busy(scheduler)
        load = os.getloadavg()[0]
        spies = [_record(scheduler, args.seconds, out / "scheduler.raw")]
        spies.append(_record(worker, args.seconds, out / "bind-worker.raw"))
        for spy in spies:
            spy.wait()
        if proc.wait() != 0:
            raise SystemExit(f"cpu_parts: the bench failed; see {out / 'bench.log'}")
    run = orjson.loads((out / "bench" / "results.json").read_bytes())["runs"][0]
    pods = max(1, int(run["bound"]))
    rows: dict[str, float] = {}
    for name, raw, classify in (
        ("scheduler", "scheduler.raw", True),
        ("bind worker", "bind-worker.raw", False),
    ):
        counts = count_samples(out / raw, classify)
        per_pod_us = run["processes"][name]["cpu_s"] / pods * 1e6
        total = sum(counts.values()) or 1
        for label, n in counts.items():
            rows[label] = rows.get(label, 0.0) + per_pod_us * n / total
    return {"workload": args.workload, "nodes": args.nodes, "pods": pods, "load": load, "parts": rows}


def render(result: dict[str, object]) -> str:
    parts: dict[str, float] = result["parts"]  # type: ignore[assignment]
    order = [label for label, _ in PARTS] + [OTHER, BIND_WORKER]
    lines = [
        f"`python -m benches.cpu_parts`: {result['workload']}, {result['nodes']:,} nodes, "
        f"{result['pods']:,} measured pods; {os.cpu_count()} CPUs, load {result['load']:.1f}",
        "",
        "| part of a scheduled pod | CPU µs per pod |",
        "| --- | ---: |",
    ]
    lines += [f"| {label} | {parts[label]:,.0f} |" for label in order if label in parts]
    lines.append(f"| **all the scheduler's processes** | **{sum(parts.values()):,.0f}** |")
    return "\n".join(lines) + "\n"


def write_readme(path: Path, table: str) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"cpu_parts: {path} has no {BEGIN!r} ... {END!r} lines")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benches.cpu_parts", description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="SchedulingBasic")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=40_000, help="measured pods: enough to outlast --seconds")
    p.add_argument("--seconds", type=float, default=15.0, help="how long to sample")
    p.add_argument("--out", type=Path, default=Path("bench-out/cpu-parts"))
    p.add_argument("--readme", type=Path, help="write the table into this file between the marker lines")
    args = p.parse_args(argv)
    if shutil.which("py-spy") is None:
        raise SystemExit("cpu_parts: py-spy is not on the PATH (pip install py-spy)")
    result = measure(args)
    (args.out / "cpu_parts.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    table = render(result)
    if args.readme is not None:
        write_readme(args.readme, table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

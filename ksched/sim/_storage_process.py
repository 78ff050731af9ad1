"""The storage controller stand-ins as a child process of the embedded cluster.

:class:`StorageControllersProcess` starts ``python -m ksched.sim.storage_controllers`` against the
cluster's URL, waits for its ``ready`` line (its caches are synced) and stops it: first by closing
its stdin (it exits on EOF, which also happens when this process dies, so the child never outlives
the cluster), then SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ksched.errors import KschedError

READY_TIMEOUT_S = 30.0
CA_ENV = "KSCHED_SIM_CA_PEM"
"""Environment variable carrying a secure cluster's CA certificate to the child."""
TOKEN_ENV = "KSCHED_SIM_TOKEN"
"""Environment variable carrying the child's bearer token for a secure cluster."""
STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageControllers:
    """Which stand-ins the child runs (all by default)."""

    pv_controller: bool = True
    provisioner: bool = True
    ephemeral: bool = True

    @property
    def any(self) -> bool:
        return self.pv_controller or self.provisioner or self.ephemeral

    def argv(self) -> list[str]:
        out = []
        if not self.pv_controller:
            out.append("--no-pv-controller")
        if not self.provisioner:
            out.append("--no-provisioner")
        if not self.ephemeral:
            out.append("--no-ephemeral")
        return out


class StorageControllersError(KschedError):
    """The child did not start (it exited, or did not get ready in time); the message says which."""


class StorageControllersProcess:
    """One running child; :meth:`wait_ready` after construction, :meth:`stop` when done."""

    def __init__(
        self,
        server_url: str,
        which: StorageControllers,
        *,
        log_file: Path | None = None,
        log_level: str = "WARNING",
        resync_s: float = 15.0,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        """``credentials``: (CA PEM, bearer token) for a secure cluster, handed to the child in its
        environment (readable by this user only, unlike its command line)."""
        env = dict(os.environ)
        if credentials is not None:
            env[CA_ENV], env[TOKEN_ENV] = credentials
        cmd = [sys.executable, "-m", "ksched.sim.storage_controllers", "--server", server_url]
        cmd += [
            *which.argv(),
            "--stop-on-stdin-eof",
            "--log-level",
            log_level,
            "--resync-period",
            str(resync_s),
        ]
        self.which = which
        self._log: IO[bytes] | None = open(log_file, "ab") if log_file is not None else None  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else None,
            env=env,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the child printed ``ready``; raises StorageControllersError otherwise."""
        out = self.proc.stdout
        assert out is not None
        deadline = time.monotonic() + timeout_s
        buf = b""
        while b"ready\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise StorageControllersError(
                    f"the storage controllers were not ready within {timeout_s:.0f}s"
                )
            readable, _, _ = select.select([out], [], [], min(left, 0.5))
            if readable:
                chunk = os.read(out.fileno(), 4096)
                if not chunk:
                    code = self.proc.wait()
                    self.stop()
                    raise StorageControllersError(f"the storage controllers exited with status {code}")
                buf += chunk

    def stop(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL; reap the child (idempotent)."""
        proc = self.proc
        if proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        for step in (None, proc.terminate, proc.kill):
            if proc.poll() is not None:
                break
            if step is not None:
                step()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(STOP_TIMEOUT_S)
        if proc.stdout is not None and not proc.stdout.closed:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

"""Cores of its own for each grading job, claimed on the machine where the job runs, whichever process runs it.

A job whose sandbox, reference process and timer share no core with another job's measures at the same time as the
others, without pausing anyone. The claim is made where the notebook runs (`claim`, called by
`tfperf_lab.grading.job.run_job`), so a local grading run, a second grading run on the same machine and every worker of
a Dask cluster on one node share the same cores without knowing of each other: each core has a lock file per user
under the temporary directory, and a job holds the locks of its cores (``fcntl.flock``: released by the kernel if the
process dies, so a killed worker never leaves a core claimed).

Only where every job can get ``per_job`` cores (two by default: lessons measure parallel work, and the campaigns and
thresholds were measured with jobs of two cores) and the machine has room for at least two such jobs; on a smaller
machine `claim` gives None and jobs share the cores, taking turns to measure (`tfperf_lab.speed.judge`). A job that
finds every core claimed waits for a set to come free: a node runs as many jobs at once as it has sets of cores, however
many worker threads it was given.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import tempfile
import time
from typing import Iterator

WAIT_SECONDS = 0.1  # between two tries when every core set is claimed


def folder() -> pathlib.Path:
    """Where the per-core lock files live: one folder per user under the temporary directory."""
    return pathlib.Path(tempfile.gettempdir()) / f"tfperf-lab-cores-{os.getuid()}"


def usable() -> list[int]:
    """The cores this process may run on."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def sets(cores: list[int], per_job: int) -> list[tuple[int, ...]]:
    """The core sets jobs are pinned to: consecutive runs of ``per_job`` cores; none when fewer than two fit."""
    count = len(cores) // per_job if per_job > 0 else 0
    return [tuple(cores[i * per_job:(i + 1) * per_job]) for i in range(count)] if count >= 2 else []


def _try(chosen: tuple[int, ...], where: pathlib.Path) -> list[int] | None:
    """The open, locked files of every core of ``chosen``, or None (and nothing held) when one is claimed already."""
    held: list[int] = []
    for core in chosen:
        handle = os.open(where / f"core-{core}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(handle)
            for other in held:
                os.close(other)  # closing releases its lock
            return None
        held.append(handle)
    return held


@contextlib.contextmanager
def claim(per_job: int, *, timeout: float | None = None, where: pathlib.Path | None = None) -> Iterator[tuple[int, ...] | None]:
    """Hold a set of ``per_job`` cores of this machine for the block (None: this machine is too small to pin jobs, see
    the module). Waits while every set is claimed; raises `TimeoutError` after ``timeout`` seconds of waiting."""
    choices = sets(usable(), per_job)
    if not choices:
        yield None
        return
    where = where or folder()
    where.mkdir(mode=0o700, exist_ok=True)
    began = time.monotonic()
    start = os.getpid() % len(choices)  # processes start their search at different sets: fewer collisions
    while True:
        for offset in range(len(choices)):
            chosen = choices[(start + offset) % len(choices)]
            held = _try(chosen, where)
            if held is not None:
                try:
                    yield chosen
                finally:
                    for handle in held:
                        os.close(handle)
                return
        if timeout is not None and time.monotonic() - began > timeout:
            raise TimeoutError(f"no set of {per_job} cores came free within {timeout:g} s")
        time.sleep(WAIT_SECONDS)
